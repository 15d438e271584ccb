package store

import (
	"context"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// WaitEmpty waits until no key starts with prefix (or, with exact, until
// key prefix itself is gone), or ctx ends. It reports whether the keys
// went; a ctx that ends first is not an error.
func (s *Store) WaitEmpty(ctx context.Context, prefix string, exact bool) (bool, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var opts []clientv3.OpOption
	if !exact {
		opts = append(opts, clientv3.WithPrefix())
	}
	for {
		resp, err := s.c.Get(ctx, prefix, append(opts, clientv3.WithCountOnly())...)
		if err != nil {
			if ctx.Err() != nil {
				return false, nil
			}
			return false, err
		}
		if resp.Count == 0 {
			return true, nil
		}
		// Watch from just after the count's revision, so no delete between
		// the count and the watch is missed.
		wopts := append([]clientv3.OpOption{clientv3.WithRev(resp.Header.Revision + 1)}, opts...)
		wch := s.c.Watch(clientv3.WithRequireLeader(ctx), prefix, wopts...)
		if !s.awaitDelete(ctx, wch) {
			return false, nil
		}
	}
}

// awaitDelete returns true after a delete event, false when ctx ends.
func (s *Store) awaitDelete(ctx context.Context, wch clientv3.WatchChan) bool {
	for {
		select {
		case <-ctx.Done():
			return false
		case wr, ok := <-wch:
			if !ok || wr.Err() != nil {
				return true // recount; a broken watch is re-established
			}
			for _, ev := range wr.Events {
				if ev.Type == clientv3.EventTypeDelete {
					return true
				}
			}
		}
	}
}
