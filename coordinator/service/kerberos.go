package service

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jcmturner/gokrb5/v8/iana/etypeID"
	"github.com/jcmturner/gokrb5/v8/keytab"
	"github.com/smbcluster/smbcluster/coordinator/store"
	adminv1 "github.com/smbcluster/smbcluster/proto/smbcluster/admin/v1"
	statev1 "github.com/smbcluster/smbcluster/proto/smbcluster/state/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// maxKeytab bounds a keytab's size: a service's keys in a few enctypes
// and versions take a few hundred bytes.
const maxKeytab = 64 << 10

// SetKeytab stores the cluster's Kerberos service keytab, sealed.
func (s *clusterService) SetKeytab(ctx context.Context, req *adminv1.SetKeytabRequest) (*adminv1.SetKeytabResponse, error) {
	kt, err := parseKeytab(req.GetKeytab())
	if err != nil {
		return nil, invalid(err)
	}
	for _, spn := range req.GetSpns() {
		if !keytabHas(kt, spn) {
			return nil, invalidf("spn %q: the keytab holds no key for it", spn)
		}
	}
	key := statev1.KerberosKey()
	rec := &statev1.KerberosRecord{
		Keytab: s.b.sealer.Seal(req.Keytab, key), Spns: req.Spns, UpdateTime: timestamppb.New(s.b.now()),
	}
	if _, err := s.b.st.Create(ctx, key, rec); errors.Is(err, store.ErrExists) {
		cur := &statev1.KerberosRecord{}
		_, err = s.b.st.Modify(ctx, key, cur, func() error { proto.Reset(cur); proto.Merge(cur, rec); return nil })
		if err != nil {
			return nil, storeError(err, "keytab")
		}
	} else if err != nil {
		return nil, storeError(err, "keytab")
	}
	s.b.log.Info("keytab set", "keys", len(kt.Entries), "spns", req.Spns)
	return &adminv1.SetKeytabResponse{Keytab: keytabOf(kt, rec)}, nil
}

// GetKeytab describes the stored keytab; the keys never leave.
func (s *clusterService) GetKeytab(ctx context.Context, req *adminv1.GetKeytabRequest) (*adminv1.GetKeytabResponse, error) {
	rec := &statev1.KerberosRecord{}
	if _, err := s.b.st.Get(ctx, statev1.KerberosKey(), rec); err != nil {
		return nil, storeError(err, "keytab")
	}
	b, err := s.b.sealer.Open(rec.Keytab, statev1.KerberosKey())
	if err != nil {
		return nil, errorf(codes.Internal, "the stored keytab does not open with this coordinator's cluster secret: %v", err)
	}
	kt, err := parseKeytab(b)
	if err != nil {
		return nil, errorf(codes.Internal, "the stored keytab does not parse: %v", err)
	}
	return &adminv1.GetKeytabResponse{Keytab: keytabOf(kt, rec)}, nil
}

// DeleteKeytab removes the cluster's keytab.
func (s *clusterService) DeleteKeytab(ctx context.Context, req *adminv1.DeleteKeytabRequest) (*adminv1.DeleteKeytabResponse, error) {
	if err := s.b.st.Delete(ctx, statev1.KerberosKey(), 0); err != nil {
		return nil, storeError(err, "keytab")
	}
	s.b.log.Info("keytab deleted")
	return &adminv1.DeleteKeytabResponse{}, nil
}

// parseKeytab decodes a keytab file; gokrb5's decoder is kept from
// panicking the coordinator on a malformed one.
func parseKeytab(b []byte) (kt *keytab.Keytab, err error) {
	switch {
	case len(b) == 0:
		return nil, errors.New("keytab is empty: give the keytab file's contents (kadmin ktadd -k FILE)")
	case len(b) > maxKeytab:
		return nil, invalidf("keytab is %d bytes, at most %d", len(b), maxKeytab)
	}
	defer func() {
		if recover() != nil {
			kt, err = nil, errors.New("keytab does not parse")
		}
	}()
	kt = keytab.New()
	if err := kt.Unmarshal(b); err != nil {
		return nil, errors.New("keytab does not parse: " + err.Error())
	}
	if len(kt.Entries) == 0 {
		return nil, errors.New("keytab holds no keys")
	}
	return kt, nil
}

// keytabHas reports whether kt has a key for spn ("cifs/host", with or
// without "@REALM").
func keytabHas(kt *keytab.Keytab, spn string) bool {
	name, realm, _ := strings.Cut(spn, "@")
	for _, e := range kt.Entries {
		if strings.EqualFold(strings.Join(e.Principal.Components, "/"), name) &&
			(realm == "" || strings.EqualFold(e.Principal.Realm, realm)) {
			return true
		}
	}
	return false
}

func keytabOf(kt *keytab.Keytab, rec *statev1.KerberosRecord) *adminv1.Keytab {
	out := &adminv1.Keytab{Spns: rec.Spns, UpdateTime: proto.CloneOf(rec.UpdateTime)}
	for _, e := range kt.Entries {
		out.Entries = append(out.Entries, &adminv1.KeytabEntry{
			Principal: strings.Join(e.Principal.Components, "/") + "@" + e.Principal.Realm,
			Kvno:      e.KVNO, Enctype: enctypeName(e.Key.KeyType),
		})
	}
	return out
}

// enctypeName is the RFC 3961 name of enctype id.
func enctypeName(id int32) string {
	switch id {
	case etypeID.AES128_CTS_HMAC_SHA1_96:
		return "aes128-cts-hmac-sha1-96"
	case etypeID.AES256_CTS_HMAC_SHA1_96:
		return "aes256-cts-hmac-sha1-96"
	case etypeID.AES128_CTS_HMAC_SHA256_128:
		return "aes128-cts-hmac-sha256-128"
	case etypeID.AES256_CTS_HMAC_SHA384_192:
		return "aes256-cts-hmac-sha384-192"
	case etypeID.RC4_HMAC:
		return "arcfour-hmac"
	case etypeID.DES3_CBC_SHA1_KD:
		return "des3-cbc-sha1"
	}
	return fmt.Sprintf("enctype-%d", id)
}
