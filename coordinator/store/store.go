package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"
)

var (
	// ErrNotFound: the key does not exist.
	ErrNotFound = errors.New("store: not found")
	// ErrExists: Create found the key present.
	ErrExists = errors.New("store: already exists")
	// ErrConflict: the key changed since it was read.
	ErrConflict = errors.New("store: changed concurrently")
)

// Store reads and writes records through an etcd client it does not own.
type Store struct {
	c *clientv3.Client
}

// New returns a Store over c.
func New(c *clientv3.Client) *Store { return &Store{c: c} }

// Client is the underlying etcd client.
func (s *Store) Client() *clientv3.Client { return s.c }

// Get reads key into m and returns its mod revision.
func (s *Store) Get(ctx context.Context, key string, m proto.Message) (int64, error) {
	resp, err := s.c.Get(ctx, key)
	if err != nil {
		return 0, err
	}
	if len(resp.Kvs) == 0 {
		return 0, ErrNotFound
	}
	kv := resp.Kvs[0]
	if err := proto.Unmarshal(kv.Value, m); err != nil {
		return 0, fmt.Errorf("store: record %s: %w", key, err)
	}
	return kv.ModRevision, nil
}

// Exists reports whether key exists.
func (s *Store) Exists(ctx context.Context, key string) (bool, error) {
	n, err := s.count(ctx, key)
	return n > 0, err
}

// Create writes m under key if key is absent (ErrExists otherwise) and
// returns the new revision.
func (s *Store) Create(ctx context.Context, key string, m proto.Message) (int64, error) {
	b, err := proto.Marshal(m)
	if err != nil {
		return 0, err
	}
	resp, err := s.c.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, string(b))).
		Commit()
	if err != nil {
		return 0, err
	}
	if !resp.Succeeded {
		return 0, ErrExists
	}
	return resp.Header.Revision, nil
}

// Update writes m under key if key's mod revision is still modRev:
// ErrNotFound if key is gone, ErrConflict if it changed.
func (s *Store) Update(ctx context.Context, key string, m proto.Message, modRev int64) (int64, error) {
	b, err := proto.Marshal(m)
	if err != nil {
		return 0, err
	}
	resp, err := s.c.Txn(ctx).
		If(clientv3.Compare(clientv3.ModRevision(key), "=", modRev)).
		Then(clientv3.OpPut(key, string(b))).
		Else(clientv3.OpGet(key, clientv3.WithCountOnly())).
		Commit()
	if err != nil {
		return 0, err
	}
	if !resp.Succeeded {
		return 0, absentOr(resp, ErrConflict)
	}
	return resp.Header.Revision, nil
}

// Modify reads key into m, calls change, and writes m back if key did not
// change meanwhile, retrying from the read otherwise. change may return an
// error to abandon the write. It returns the new revision.
func (s *Store) Modify(ctx context.Context, key string, m proto.Message, change func() error) (int64, error) {
	for {
		rev, err := s.Get(ctx, key, m)
		if err != nil {
			return 0, err
		}
		if err := change(); err != nil {
			return 0, err
		}
		rev, err = s.Update(ctx, key, m, rev)
		if !errors.Is(err, ErrConflict) {
			return rev, err
		}
	}
}

// Delete removes key: ErrNotFound if absent. With modRev > 0 the key must
// still be at that mod revision (ErrConflict otherwise).
func (s *Store) Delete(ctx context.Context, key string, modRev int64) error {
	cmp := clientv3.Compare(clientv3.CreateRevision(key), ">", 0)
	if modRev > 0 {
		cmp = clientv3.Compare(clientv3.ModRevision(key), "=", modRev)
	}
	resp, err := s.c.Txn(ctx).If(cmp).
		Then(clientv3.OpDelete(key)).
		Else(clientv3.OpGet(key, clientv3.WithCountOnly())).
		Commit()
	if err != nil {
		return err
	}
	if !resp.Succeeded {
		return absentOr(resp, ErrConflict)
	}
	return nil
}

// absentOr tells from a failed transaction's Else count whether the key
// was absent (ErrNotFound) or present (err).
func absentOr(resp *clientv3.TxnResponse, err error) error {
	if len(resp.Responses) == 1 {
		if r := resp.Responses[0].GetResponseRange(); r != nil && r.Count == 0 {
			return ErrNotFound
		}
	}
	return err
}

// PutWithTTL writes m under key on a fresh lease of ttl, so that the key
// goes by itself (close requests).
func (s *Store) PutWithTTL(ctx context.Context, key string, m proto.Message, ttl time.Duration) error {
	b, err := proto.Marshal(m)
	if err != nil {
		return err
	}
	lease, err := s.c.Grant(ctx, int64((ttl+time.Second-1)/time.Second))
	if err != nil {
		return err
	}
	_, err = s.c.Put(ctx, key, string(b), clientv3.WithLease(lease.ID))
	return err
}

// Item is one record of a List, with its key and mod revision.
type Item[M proto.Message] struct {
	Key         string
	ModRevision int64
	Record      M
}

// List reads every record under prefix, in key order; newRecord returns an
// empty record to decode into.
func List[M proto.Message](ctx context.Context, s *Store, prefix string, newRecord func() M) ([]Item[M], error) {
	resp, err := s.c.Get(ctx, prefix, clientv3.WithPrefix())
	if err != nil {
		return nil, err
	}
	items := make([]Item[M], 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		m := newRecord()
		if err := proto.Unmarshal(kv.Value, m); err != nil {
			return nil, fmt.Errorf("store: record %s: %w", kv.Key, err)
		}
		items = append(items, Item[M]{Key: string(kv.Key), ModRevision: kv.ModRevision, Record: m})
	}
	return items, nil
}

// Keys lists the keys under prefix, in key order, without their values.
func (s *Store) Keys(ctx context.Context, prefix string) ([]string, error) {
	resp, err := s.c.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return nil, err
	}
	keys := make([]string, len(resp.Kvs))
	for i, kv := range resp.Kvs {
		keys[i] = string(kv.Key)
	}
	return keys, nil
}

// Values returns the raw values under prefix by key.
func (s *Store) Values(ctx context.Context, prefix string) (map[string][]byte, error) {
	resp, err := s.c.Get(ctx, prefix, clientv3.WithPrefix())
	if err != nil {
		return nil, err
	}
	m := make(map[string][]byte, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		m[string(kv.Key)] = kv.Value
	}
	return m, nil
}

// Count counts the keys under prefix.
func (s *Store) Count(ctx context.Context, prefix string) (int64, error) {
	resp, err := s.c.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return 0, err
	}
	return resp.Count, nil
}

func (s *Store) count(ctx context.Context, key string) (int64, error) {
	resp, err := s.c.Get(ctx, key, clientv3.WithCountOnly())
	if err != nil {
		return 0, err
	}
	return resp.Count, nil
}
