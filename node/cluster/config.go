package cluster

import (
	"github.com/smbcluster/smbcluster/node/server"
	statev1 "github.com/smbcluster/smbcluster/proto/smbcluster/state/v1"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"google.golang.org/protobuf/proto"
)

// configState is the configuration as last read from etcd and what of it
// the node applied. Owned by the agent's goroutine.
type configState struct {
	rev    int64                           // revision the state reflects
	shares map[string]*statev1.ShareRecord // wanted, by lower-case name
	served map[string]*statev1.ShareRecord // applied to the share table
	failed map[string]*statev1.ShareRecord // last record that failed to apply
	users  map[string]bool                 // applied, by lower-case name
	// settings are the cluster's Settings; servedEncrypt is the
	// EncryptData the served shares were put with.
	settings      *statev1.Settings
	servedEncrypt bool
	keytab        bool // the cluster's keytab is applied
}

func (c *configState) init() {
	c.shares = map[string]*statev1.ShareRecord{}
	c.served = map[string]*statev1.ShareRecord{}
	c.failed = map[string]*statev1.ShareRecord{}
	c.users = map[string]bool{}
	c.settings = &statev1.Settings{}
}

// onShare records a share put (value) or deletion (nil value).
func (a *Agent) onShare(key string, value []byte) {
	name := statev1.LastKeyPart(key)
	if value == nil {
		delete(a.conf.shares, name)
		return
	}
	rec := &statev1.ShareRecord{}
	if err := proto.Unmarshal(value, rec); err != nil {
		a.log.Warn("ignoring a share record that does not decode", "key", key, "err", err)
		return
	}
	a.conf.shares[name] = rec
}

// resetShares replaces the wanted shares with kvs.
func (a *Agent) resetShares(kvs []*mvccpb.KeyValue) {
	clear(a.conf.shares)
	for _, kv := range kvs {
		a.onShare(string(kv.Key), kv.Value)
	}
}

// reconcileShares brings the share table to the wanted shares: new and
// changed ones are put, removed ones deleted with their trees ended. A
// share that fails to apply (its path missing on this node) is retried
// at every sweep and logged once per record.
func (a *Agent) reconcileShares() {
	encrypt := a.conf.settings.GetEncryptData()
	for name, rec := range a.conf.shares {
		old := a.conf.served[name]
		if old != nil && proto.Equal(old, rec) && encrypt == a.conf.servedEncrypt {
			continue
		}
		replaced, err := a.node.Shares.Put(rec, encrypt)
		if err != nil {
			if !proto.Equal(a.conf.failed[name], rec) {
				a.log.Warn("cannot serve share", "share", rec.Name, "path", rec.Path, "err", err)
				a.conf.failed[name] = rec
			}
			continue
		}
		delete(a.conf.failed, name)
		a.conf.served[name] = rec
		if replaced != nil {
			n := a.node.Server.EndShareTrees(replaced)
			a.node.Shares.Release(replaced)
			a.log.Info("share changed", "share", rec.Name, "trees_ended", n)
		} else if old == nil {
			a.log.Info("serving share", "share", rec.Name, "path", rec.Path)
		}
	}
	a.conf.servedEncrypt = encrypt
	for name := range a.conf.served {
		if _, ok := a.conf.shares[name]; ok {
			continue
		}
		delete(a.conf.served, name)
		delete(a.conf.failed, name)
		if sh, ok := a.node.Shares.Delete(name); ok {
			n := a.node.Server.EndShareTrees(sh)
			a.node.Shares.Release(sh)
			a.log.Info("share deleted", "share", name, "trees_ended", n)
		}
	}
}

// onUser applies a user put or deletion: a deleted user's sessions end; a
// new password applies to new logons only.
func (a *Agent) onUser(key string, value []byte) {
	name := statev1.LastKeyPart(key)
	if value == nil {
		a.deleteUser(name)
		return
	}
	rec := &statev1.UserRecord{}
	if err := proto.Unmarshal(value, rec); err != nil {
		a.log.Warn("ignoring a user record that does not decode", "key", key, "err", err)
		return
	}
	h, err := a.cfg.Sealer.Open(rec.NtHash, statev1.UserKey(rec.Name))
	if err != nil || len(h) != 16 {
		// A user this node cannot check passwords of must not log on
		// with an old one.
		a.log.Error("cannot open the user's password hash: is --secret-file the coordinator's?", "user", rec.Name, "err", err)
		a.deleteUser(name)
		return
	}
	a.node.Users.SetUser(name, [16]byte(h))
	a.node.Users.SetPrincipals(name, rec.KerberosPrincipals)
	a.conf.users[name] = true
}

func (a *Agent) deleteUser(name string) {
	if !a.conf.users[name] {
		return
	}
	delete(a.conf.users, name)
	a.node.Users.DeleteUser(name)
	n := a.node.Server.EndUserSessions(name)
	a.log.Info("user deleted", "user", name, "sessions_ended", n)
}

// resetUsers applies kvs as the whole user table.
func (a *Agent) resetUsers(kvs []*mvccpb.KeyValue) {
	present := map[string]bool{}
	for _, kv := range kvs {
		present[statev1.LastKeyPart(string(kv.Key))] = true
		a.onUser(string(kv.Key), kv.Value)
	}
	for name := range a.conf.users {
		if !present[name] {
			a.deleteUser(name)
		}
	}
}

// onSettings applies the cluster settings: EncryptData to every share, the
// others through the server's Control policy.
func (a *Agent) onSettings(_ string, value []byte) {
	s := &statev1.Settings{}
	if value != nil {
		if err := proto.Unmarshal(value, s); err != nil {
			a.log.Warn("ignoring settings that do not decode", "err", err)
			return
		}
	}
	if !proto.Equal(s, a.conf.settings) {
		a.log.Info("cluster settings", "encrypt_data", s.EncryptData, "require_signing", s.RequireSigning, "allow_guest", s.AllowGuest)
	}
	a.conf.settings = s
	if a.node.Control != nil {
		// Signing, guest access and the dialect range apply to the next
		// negotiations and logons; sessions keep what they negotiated.
		a.node.Control.SetPolicy(server.Policy{
			SigningRequired: s.RequireSigning, AllowGuest: s.AllowGuest,
			MinDialect: uint16(s.MinDialect), MaxDialect: uint16(s.MaxDialect),
		})
	}
}

func (a *Agent) resetSettings(kvs []*mvccpb.KeyValue) {
	var v []byte
	if len(kvs) > 0 {
		v = kvs[0].Value
	}
	a.onSettings("", v)
}

// onNetName applies the state of the cluster's network name
// (NetNameRecord; none: online) to the server: while it is offline, disk
// shares refuse new trees.
func (a *Agent) onNetName(_ string, value []byte) {
	rec := &statev1.NetNameRecord{}
	if value != nil {
		if err := proto.Unmarshal(value, rec); err != nil {
			a.log.Warn("ignoring a network name record that does not decode", "err", err)
			return
		}
	}
	if a.node.Control == nil {
		return
	}
	if was := a.node.Control.NetNameOffline(); was != rec.Offline {
		if rec.Offline {
			a.log.Info("the cluster's network name is offline: refusing new trees of disk shares", "by", rec.ChangedBy, "node", rec.Node)
		} else {
			a.log.Info("the cluster's network name is online", "by", rec.ChangedBy, "node", rec.Node)
		}
	}
	a.node.Control.SetNetNameOffline(rec.Offline)
}

func (a *Agent) resetNetName(kvs []*mvccpb.KeyValue) {
	var v []byte
	if len(kvs) > 0 {
		v = kvs[0].Value
	}
	a.onNetName("", v)
}

// onKerberos applies the cluster's keytab (KerberosRecord): it serves the
// next Kerberos logons; sessions established go on.
func (a *Agent) onKerberos(_ string, value []byte) {
	if a.node.Keytabs == nil {
		return
	}
	if value == nil {
		if a.conf.keytab {
			a.conf.keytab = false
			a.node.Keytabs.SetKeytab(nil, nil)
			a.log.Info("cluster keytab removed")
		}
		return
	}
	rec := &statev1.KerberosRecord{}
	if err := proto.Unmarshal(value, rec); err != nil {
		a.log.Warn("ignoring a Kerberos record that does not decode", "err", err)
		return
	}
	kt, err := a.cfg.Sealer.Open(rec.Keytab, statev1.KerberosKey())
	if err != nil {
		a.log.Error("cannot open the cluster keytab: is --secret-file the coordinator's?", "err", err)
		return
	}
	if err := a.node.Keytabs.SetKeytab(kt, rec.Spns); err != nil {
		a.log.Error("cannot use the cluster keytab", "err", err)
		return
	}
	a.conf.keytab = true
	a.log.Info("cluster keytab applied", "spns", rec.Spns)
}

func (a *Agent) resetKerberos(kvs []*mvccpb.KeyValue) {
	var v []byte
	if len(kvs) > 0 {
		v = kvs[0].Value
	}
	a.onKerberos("", v)
}
