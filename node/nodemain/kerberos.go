package nodemain

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/smbcluster/smbcluster/node/auth"
	"github.com/smbcluster/smbcluster/node/cluster"
)

// Authentication mechanisms (--auth).
const (
	authBoth     = "both"
	authNTLM     = "ntlm"
	authKerberos = "kerberos"
)

// kerberosFor builds the node's Kerberos acceptor, nil when --auth is ntlm.
// The keytab comes from --keytab at start; in a cluster the one set with
// `smbctl cluster set-keytab` replaces it (cluster.Node.Kerberos).
func kerberosFor(cfg *Config, users *userDB) (*auth.Kerberos, error) {
	if cfg.Auth == authNTLM {
		return nil, nil
	}
	users.setMapRealms(append([]string(nil), cfg.KerberosRealms...))
	k := &auth.Kerberos{Principals: users, MaxClockSkew: time.Duration(cfg.KerberosClockSkew)}
	if cfg.Keytab == "" {
		if cfg.Auth == authKerberos && cfg.Etcd == "" {
			return nil, fmt.Errorf("--auth kerberos needs --keytab FILE (or a cluster keytab, with --etcd)")
		}
		return k, nil
	}
	b, err := os.ReadFile(cfg.Keytab)
	if err != nil {
		return nil, fmt.Errorf("--keytab: %w", err)
	}
	kt, err := auth.ParseKeytab(b)
	if err != nil {
		return nil, fmt.Errorf("--keytab %s: %w", cfg.Keytab, err)
	}
	k.SetKeytab(kt, cfg.SPNs)
	if len(cfg.KerberosRealms) == 0 {
		users.setMapRealms(keytabRealms(b))
	}
	return k, nil
}

// keytabRealms lists the realms of a keytab's principals.
func keytabRealms(b []byte) []string {
	kt, err := auth.ParseKeytab(b)
	if err != nil {
		return nil
	}
	seen := map[string]bool{}
	var out []string
	for _, e := range kt.Entries {
		if r := e.Principal.Realm; !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	return out
}

// MapPrincipal maps a Kerberos client principal to a user
// (auth.PrincipalMapper): a cluster user that lists the principal, else,
// for a realm of --krb-realm (by default the keytab's realms), the user of
// the principal's name without its realm. The user must exist.
func (u *userDB) MapPrincipal(name, realm string) (string, bool) {
	full := strings.ToLower(name + "@" + realm)
	u.mu.RLock()
	defer u.mu.RUnlock()
	if user, ok := u.principals[full]; ok {
		return user, true
	}
	if strings.Contains(name, "/") || !u.stripsRealm(realm) {
		return "", false // a service principal, or a foreign realm
	}
	key := strings.ToLower(name)
	if _, ok := u.cluster[key]; ok {
		return name, true
	}
	if _, ok := u.static[key]; ok {
		return name, true
	}
	return "", false
}

func (u *userDB) stripsRealm(realm string) bool {
	for _, r := range u.mapRealms {
		if r == "*" || strings.EqualFold(r, realm) {
			return true
		}
	}
	return false
}

// SetPrincipals records the Kerberos principals ("name@REALM") that map
// to cluster user name, replacing those it had (cluster.Users).
func (u *userDB) SetPrincipals(name string, principals []string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for p, user := range u.principals {
		if strings.EqualFold(user, name) {
			delete(u.principals, p)
		}
	}
	for _, p := range principals {
		u.principals[strings.ToLower(p)] = name
	}
}

// keytabs applies the cluster's keytab to the node's Kerberos acceptor
// (cluster.Keytabs); without one the node uses its --keytab, if any.
type keytabs struct {
	krb   *auth.Kerberos
	users *userDB
	cfg   *Config
}

func (k keytabs) SetKeytab(b []byte, spns []string) error {
	if b == nil {
		k.fallback()
		return nil
	}
	kt, err := auth.ParseKeytab(b)
	if err != nil {
		return err
	}
	k.krb.SetKeytab(kt, spns)
	if len(k.cfg.KerberosRealms) == 0 {
		k.users.setMapRealms(keytabRealms(b))
	}
	return nil
}

// fallback returns to the --keytab file, or to no Kerberos.
func (k keytabs) fallback() {
	if k.cfg.Keytab == "" {
		k.krb.SetKeytab(nil, nil)
		return
	}
	b, err := os.ReadFile(k.cfg.Keytab)
	if err == nil {
		err = k.SetKeytab(b, k.cfg.SPNs)
	}
	if err != nil {
		k.krb.SetKeytab(nil, nil)
	}
}

func (u *userDB) setMapRealms(realms []string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.mapRealms = realms
}

// keytabsFor is what the cluster agent gives its keytab to; nil with
// --auth ntlm.
func keytabsFor(krb *auth.Kerberos, users *userDB, cfg *Config) cluster.Keytabs {
	if krb == nil {
		return nil
	}
	return keytabs{krb: krb, users: users, cfg: cfg}
}
