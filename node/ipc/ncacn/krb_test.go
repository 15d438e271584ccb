package ncacn

import (
	"testing"
	"time"

	"github.com/jcmturner/gokrb5/v8/iana/etypeID"
	"github.com/jcmturner/gokrb5/v8/keytab"

	"github.com/smbcluster/smbcluster/node/auth"
	"github.com/smbcluster/smbcluster/node/ipc/dcerpc"
)

// TestSecurityOffers: Kerberos (auth_type 16) only with a keytab, next to
// NTLMSSP raw and in SPNEGO; NTLMSecurity never offers it.
func TestSecurityOffers(t *testing.T) {
	kt := keytab.New()
	if err := kt.AddEntry("host/files.test", "TEST.REALM", "pw", time.Now(), 1, etypeID.AES256_CTS_HMAC_SHA1_96); err != nil {
		t.Fatal(err)
	}
	with := &auth.Kerberos{}
	with.SetKeytab(kt, nil)
	for _, c := range []struct {
		sec  *dcerpc.Security
		krb5 bool
	}{
		{Security(&auth.Config{Kerberos: with}, nil), true},
		{Security(&auth.Config{Kerberos: &auth.Kerberos{}}, nil), false},
		{Security(&auth.Config{}, nil), false},
		{NTLMSecurity(&auth.Config{Kerberos: with}), false},
	} {
		if got := c.sec.New(dcerpc.AuthTypeKerberos) != nil; got != c.krb5 {
			t.Errorf("Kerberos offered %v, want %v", got, c.krb5)
		}
		for _, typ := range []uint8{dcerpc.AuthTypeNTLMSSP, dcerpc.AuthTypeSPNEGO} {
			if c.sec.New(typ) == nil {
				t.Errorf("auth_type %d not offered", typ)
			}
		}
		if c.sec.New(68) != nil { // RPC_C_AUTHN_NETLOGON
			t.Error("schannel offered")
		}
	}
	a := Security(&auth.Config{Kerberos: with}, nil).New(dcerpc.AuthTypeKerberos)
	if _, _, err := a.Step([]byte("not an AP-REQ")); err == nil {
		t.Error("garbage accepted as an AP-REQ")
	}
}
