package integration

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	gosmb2 "github.com/cloudsoda/go-smb2"
	"github.com/jcmturner/gofork/encoding/asn1"
	"github.com/jcmturner/gokrb5/v8/asn1tools"
	"github.com/jcmturner/gokrb5/v8/client"
	"github.com/jcmturner/gokrb5/v8/config"
	"github.com/jcmturner/gokrb5/v8/credentials"
	"github.com/jcmturner/gokrb5/v8/gssapi"
	"github.com/jcmturner/gokrb5/v8/iana/chksumtype"
	"github.com/jcmturner/gokrb5/v8/messages"
	"github.com/jcmturner/gokrb5/v8/spnego"
	"github.com/jcmturner/gokrb5/v8/types"

	"github.com/smbcluster/smbcluster/integration/framework"
	"github.com/smbcluster/smbcluster/node/servertest"
	"github.com/smbcluster/smbcluster/node/smb2"
)

// The Kerberos tests run a throw-away MIT KDC (framework.StartKDC) and
// log on with clients we did not write: smbclient --use-kerberos=required
// and go-smb2's Krb5Initiator (gokrb5). Refusals are checked with AP-REQs
// gokrb5 builds from tickets the KDC issued, sent in a raw SESSION_SETUP.

// krbRealm and krbSPN are the realm and the one service principal of the
// whole cluster; krbHost is the name clients use for every node (smbclient
// -I, go-smb2's TargetSPN).
const (
	krbRealm = "TEST.REALM"
	krbHost  = "files.test"
	krbSPN   = "cifs/" + krbHost
)

// kerberosRealm starts a KDC with user alice (framework.DefaultUsers'
// password) and the service principal krbSPN, and returns it with the
// path of the service's keytab and alice's credential cache.
func kerberosRealm(t *testing.T) (kdc *framework.KDC, keytab, ccache string) {
	t.Helper()
	kdc = framework.StartKDC(t, krbRealm)
	kdc.AddUser(t, user, password())
	kdc.AddService(t, krbSPN)
	keytab = kdc.Keytab(t, krbSPN)
	ccache = kdc.Kinit(t, user+"@"+krbRealm, password())
	return kdc, keytab, ccache
}

// krbSMBClient is smbclient logging on to n with alice's tickets.
func krbSMBClient(kdc *framework.KDC, ccache string, n *framework.Node, protection string) framework.SMBClient {
	return framework.SMBClient{Node: n, User: user, Kerberos: ccache, Env: kdc.ClientEnv(ccache),
		ServerName: krbHost, Protection: protection}
}

// krbClient is a gokrb5 client with the tickets of ccache.
func krbClient(t *testing.T, kdc *framework.KDC, ccache string) *client.Client {
	t.Helper()
	cfg, err := config.Load(kdc.Config)
	if err != nil {
		t.Fatal(err)
	}
	cc, err := credentials.LoadCCache(ccache)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := client.NewFromCCache(cc, cfg, client.DisablePAFXFAST(true))
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// apReq is a SPNEGO NegTokenInit carrying an AP-REQ for spn made from
// cl's ticket, after change has had its way with the authenticator.
func apReq(t *testing.T, cl *client.Client, spn string, change func(*types.Authenticator)) []byte {
	t.Helper()
	tkt, key, err := cl.GetServiceTicket(spn)
	if err != nil {
		t.Fatalf("service ticket for %s: %v", spn, err)
	}
	return apReqToken(t, cl, tkt, key, change)
}

// apReqToken is apReq with a ticket at hand.
func apReqToken(t *testing.T, cl *client.Client, tkt messages.Ticket, key types.EncryptionKey, change func(*types.Authenticator)) []byte {
	t.Helper()
	a, err := types.NewAuthenticator(cl.Credentials.Domain(), cl.Credentials.CName())
	if err != nil {
		t.Fatal(err)
	}
	ck := make([]byte, 24)
	binary.LittleEndian.PutUint32(ck, 16)
	a.Cksum = types.Checksum{CksumType: chksumtype.GSSAPI, Checksum: ck}
	if change != nil {
		change(&a)
	}
	req, err := messages.NewAPReq(tkt, key, a)
	if err != nil {
		t.Fatal(err)
	}
	b, err := req.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	oid, _ := asn1.Marshal(gssapi.OIDKRB5.OID())
	tok := asn1tools.AddASNAppTag(append(append(oid, 0x01, 0x00), b...), 0)
	init := spnego.SPNEGOToken{Init: true, NegTokenInit: spnego.NegTokenInit{
		MechTypes: []asn1.ObjectIdentifier{gssapi.OIDKRB5.OID()}, MechTokenBytes: tok}}
	out, err := init.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// sessionSetup sends token in a new session's SESSION_SETUP on a fresh
// 3.1.1 connection to addr and returns the status.
func sessionSetup(t *testing.T, addr string, token []byte) smb2.Status {
	t.Helper()
	c := servertest.Dial(t, addr)
	defer c.Close()
	if err := c.Negotiate(smb2.Dialect311); err != nil {
		t.Fatal(err)
	}
	hdr := c.Header(smb2.CmdSessionSetup)
	hdr.SessionID = 0
	h, _ := c.Send(hdr, servertest.Body(&smb2.SessionSetupRequest{SecurityMode: 1, SecurityBuffer: token}))
	return smb2.Status(h.Status)
}

// goSMB2Kerberos logs on to addr with go-smb2's Kerberos initiator for spn
// (mutual authentication: the session key is the AP-REP's subkey).
func goSMB2Kerberos(ctx context.Context, cl *client.Client, addr, spn string) (*gosmb2.Session, error) {
	d := &gosmb2.Dialer{Initiator: &gosmb2.Krb5Initiator{Client: cl, TargetSPN: spn}}
	return d.Dial(ctx, addr)
}

// TestKerberosNode: one node with --keytab and --auth kerberos; smbclient
// lists and reads, NTLM is refused with STATUS_NTLM_BLOCKED.
func TestKerberosNode(t *testing.T) {
	framework.RequireTool(t, "smbclient")
	kdc, keytab, ccache := kerberosRealm(t)
	n := framework.StartNode(t, framework.Options{Args: []string{"--keytab", keytab, "--spn", krbSPN, "--auth", "kerberos"}})
	c := krbSMBClient(kdc, ccache, n, "")
	checkList(t, c)
	os.WriteFile(filepath.Join(n.SharePath(shareNm), "k.txt"), []byte("kerberos\n"), 0o644)
	local := t.TempDir()
	if r := c.Script(t, local, shareNm, "get k.txt"); r.ExitCode != 0 || strings.Contains(r.Output(), "NT_STATUS_") {
		t.Fatalf("get: %s", r)
	}
	if b, _ := os.ReadFile(filepath.Join(local, "k.txt")); string(b) != "kerberos\n" {
		t.Errorf("k.txt read back as %q", b)
	}
	if !strings.Contains(n.Log(), "principal="+user+"@"+krbRealm) {
		t.Errorf("the node logged no Kerberos session of %s@%s:\n%s", user, krbRealm, n.Log())
	}
	ntlm := framework.SMBClient{Node: n, User: user, Password: password(), Extra: []string{"--use-kerberos=disabled"}}
	if r := ntlm.Script(t, local, shareNm, "ls"); r.ExitCode == 0 || !strings.Contains(r.Output(), "NT_STATUS_NTLM_BLOCKED") {
		t.Errorf("NTLM with --auth kerberos: want NT_STATUS_NTLM_BLOCKED:\n%s", r)
	}
	if st := servertestNTLM(t, n.Addr); st != smb2.StatusNtlmBlocked {
		t.Errorf("raw NTLMSSP: %v, want STATUS_NTLM_BLOCKED", st)
	}
}

// checkKerberosBind: a session made with Kerberos through node 1 gets a
// channel bound through node 2 with an AP-REQ of its own (the connection
// is handed to node 1, node/handoff); both channels sign with keys derived
// from their own authenticator's subkey, and data written through the
// bound channel reads back through both.
func checkKerberosBind(t *testing.T, kdc *framework.KDC, ccache string, c *framework.Cluster) {
	cl := krbClient(t, kdc, ccache)
	tkt, key, err := cl.GetServiceTicket(krbSPN)
	if err != nil {
		t.Fatal(err)
	}
	// An AP-REQ whose authenticator carries a fresh subkey: without mutual
	// authentication the session key is the subkey ([MS-KILE] 3.1.1.2).
	token := func() ([]byte, []byte) {
		sub := types.EncryptionKey{KeyType: key.KeyType, KeyValue: make([]byte, len(key.KeyValue))}
		rand.Read(sub.KeyValue)
		tok := apReqToken(t, cl, tkt, key, func(a *types.Authenticator) { a.SubKey = sub })
		k := make([]byte, 16)
		copy(k, sub.KeyValue)
		return tok, k
	}
	first := servertest.Dial(t, c.Nodes[0].Addr)
	if err := first.Negotiate(smb2.Dialect311); err != nil {
		t.Fatal(err)
	}
	tok, k := token()
	if err := first.SessionSetupToken(tok, k); err != nil {
		t.Fatalf("Kerberos session through %s: %v", c.Nodes[0].Name, err)
	}
	if _, err := first.TreeConnect(shareNm); err != nil {
		t.Fatal(err)
	}
	second := servertest.Dial(t, c.Nodes[1].Addr)
	second.ClientGUID = first.ClientGUID
	if err := second.Negotiate(smb2.Dialect311); err != nil {
		t.Fatal(err)
	}
	tok, k = token()
	if err := second.BindToken(first.Session, tok, k); err != nil {
		t.Fatalf("Kerberos binding through %s of a session of %s: %v", c.Nodes[1].Name, c.Nodes[0].Name, err)
	}
	second.TreeID = first.TreeID
	first.Sign, second.Sign = true, true
	fid, err := first.Create("krb-bind.dat")
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 64<<10)
	rand.Read(data)
	if _, err := second.Write(fid, 0, data); err != nil {
		t.Fatalf("WRITE through the bound channel: %v", err)
	}
	for i, ch := range []*servertest.Conn{first, second} {
		if got, err := ch.Read(fid, 0, len(data)); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("READ through channel %d: %v", i+1, err)
		}
	}
	if err := second.CloseFile(fid); err != nil {
		t.Fatal(err)
	}
}

// servertestNTLM logs on with NTLMv2 and returns the status.
func servertestNTLM(t *testing.T, addr string) smb2.Status {
	c := servertest.Dial(t, addr)
	defer c.Close()
	if err := c.Negotiate(smb2.Dialect311); err != nil {
		t.Fatal(err)
	}
	err := c.SessionSetup(user, password())
	var st smb2.Status
	if errors.As(err, &st) {
		return st
	}
	return smb2.StatusSuccess
}

// TestKerberosCluster is the acceptance test of one service principal for
// the whole cluster: the keytab set once with smbctl reaches both nodes,
// which serve smbclient (signed and sealed) and go-smb2 under cifs/files.test.
func TestKerberosCluster(t *testing.T) {
	framework.RequireTool(t, "smbclient")
	kdc, keytab, ccache := kerberosRealm(t)
	c := framework.NewCluster(t, framework.ClusterOptions{Nodes: 2, NodeArgs: []string{"--auth", "kerberos"}})
	dataDir := t.TempDir()
	c.MustSMBCtl(t, "share", "add", shareNm, dataDir)
	c.MustSMBCtl(t, "user", "add", user, "--password", "unused-"+password())
	c.MustSMBCtl(t, "kerberos", "set-keytab", keytab, "--spn", krbSPN)
	local := t.TempDir()
	for _, n := range c.Nodes {
		// The share is listed once the node serves it: after its storage
		// check, which a loaded machine can make take seconds.
		framework.WaitFor(t, clusterDeadline, "Kerberos logons on "+n.Name+", listing the share", func() bool {
			r := krbSMBClient(kdc, ccache, n.Node, "").List(t)
			return r.ExitCode == 0 && listed.MatchString(r.Stdout)
		})
		for _, p := range []string{"sign", "encrypt"} {
			t.Run(n.Name+"/smbclient/"+p, func(t *testing.T) {
				name := n.Name + "-" + p + ".bin"
				sum := writeRandomFile(t, filepath.Join(local, name), mib+3, uint64(len(name)))
				k := krbSMBClient(kdc, ccache, n.Node, p)
				checkList(t, k)
				r := k.Script(t, local, shareNm, "put "+name, "get "+name+" back-"+name, "ls")
				if r.ExitCode != 0 || strings.Contains(r.Output(), "NT_STATUS_") {
					t.Fatalf("put/get: %s", r)
				}
				assertSum(t, filepath.Join(dataDir, name), sum, mib+3)
				assertSum(t, filepath.Join(local, "back-"+name), sum, mib+3)
			})
		}
		t.Run(n.Name+"/go-smb2", func(t *testing.T) { checkGoSMB2Kerberos(t, krbClient(t, kdc, ccache), n, dataDir) })
		t.Run(n.Name+"/impacket", func(t *testing.T) { checkImpacketKerberos(t, kdc, ccache, n) })
	}
	t.Run("NTLMBlocked", func(t *testing.T) {
		for _, n := range c.Nodes {
			if st := servertestNTLM(t, n.Addr); st != smb2.StatusNtlmBlocked {
				t.Errorf("%s: NTLMSSP %v, want STATUS_NTLM_BLOCKED", n.Name, st)
			}
		}
	})
	t.Run("BindAcrossNodes", func(t *testing.T) { checkKerberosBind(t, kdc, ccache, c) })
	t.Run("PrincipalMapping", func(t *testing.T) { checkPrincipalMapping(t, kdc, c) })
	t.Run("Refused", func(t *testing.T) { checkKerberosRefusals(t, kdc, ccache, c) })
	t.Run("KeytabRemoved", func(t *testing.T) {
		c.MustSMBCtl(t, "kerberos", "rm")
		cl := krbClient(t, kdc, ccache)
		for _, n := range c.Nodes {
			framework.WaitFor(t, clusterDeadline, n.Name+" to drop the keytab", func() bool {
				return sessionSetup(t, n.Addr, apReq(t, cl, krbSPN, nil)) == smb2.StatusLogonFailure
			})
		}
	})
}

// checkPrincipalMapping: a principal a cluster user lists logs on as that
// user; a principal that maps to no user is refused.
func checkPrincipalMapping(t *testing.T, kdc *framework.KDC, c *framework.Cluster) {
	n := c.Nodes[1]
	kdc.AddUser(t, "a.smith", "Smith-Pass-1")
	kdc.AddUser(t, "mallory", "Mallory-Pass-1")
	smith := kdc.Kinit(t, "a.smith@"+krbRealm, "Smith-Pass-1")
	if st := sessionSetup(t, n.Addr, apReq(t, krbClient(t, kdc, smith), krbSPN, nil)); st != smb2.StatusLogonFailure {
		t.Errorf("a.smith, no such user: %v, want STATUS_LOGON_FAILURE", st)
	}
	c.MustSMBCtl(t, "user", "principals", user, "a.smith@"+krbRealm)
	framework.WaitFor(t, clusterDeadline, "a.smith to log on as "+user, func() bool {
		return krbSMBClient(kdc, smith, n.Node, "").Script(t, "", shareNm, "ls").ExitCode == 0
	})
	framework.WaitFor(t, clusterDeadline, "the node to log a.smith's session as "+user, func() bool {
		return strings.Contains(n.Log(), "user="+user+" principal=a.smith@"+krbRealm)
	})
	mallory := kdc.Kinit(t, "mallory@"+krbRealm, "Mallory-Pass-1")
	if st := sessionSetup(t, n.Addr, apReq(t, krbClient(t, kdc, mallory), krbSPN, nil)); st != smb2.StatusLogonFailure {
		t.Errorf("mallory, no such user: %v, want STATUS_LOGON_FAILURE", st)
	}
}

// checkImpacketKerberos runs testdata/impacket_kerberos.py against n with
// the service ticket smbclient left in ccache.
func checkImpacketKerberos(t *testing.T, kdc *framework.KDC, ccache string, n *framework.ClusterNode) {
	framework.RequirePythonModule(t, "impacket.smbconnection")
	script, err := filepath.Abs(filepath.Join("testdata", "impacket_kerberos.py"))
	if err != nil {
		t.Fatal(err)
	}
	r := framework.RunAs(t, nil, kdc.ClientEnv(ccache), "", framework.Python, script,
		n.Host, strconv.Itoa(n.Port), krbHost, shareNm, user, krbRealm)
	if r.ExitCode != 0 || !strings.Contains(r.Stdout, "PASS") {
		t.Fatalf("impacket Kerberos logon:\n%s", r)
	}
}

// checkGoSMB2Kerberos writes a file through n with go-smb2 logged on with
// Kerberos and reads it back, from the disk and through the session.
func checkGoSMB2Kerberos(t *testing.T, cl *client.Client, n *framework.ClusterNode, dataDir string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := goSMB2Kerberos(ctx, cl, n.Addr, krbSPN)
	if err != nil {
		t.Fatalf("go-smb2 Kerberos logon to %s: %v", n.Name, err)
	}
	defer s.Logoff()
	fs, err := s.Mount(`\\` + krbHost + `\` + shareNm)
	if err != nil {
		t.Fatalf("mount: %v", err)
	}
	defer fs.Umount()
	want := bytes.Repeat([]byte("kerberos through "+n.Name+"\n"), 5000)
	name := "gosmb2-" + n.Name + ".txt"
	if err := fs.WriteFile(name, want, 0o644); err != nil {
		t.Fatalf("write: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(dataDir, name)); err != nil || !bytes.Equal(b, want) {
		t.Errorf("on disk: %d bytes, %v; want %d", len(b), err, len(want))
	}
	f, err := fs.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if b, err := io.ReadAll(f); err != nil || !bytes.Equal(b, want) {
		t.Errorf("read back: %d bytes, %v; want %d", len(b), err, len(want))
	}
}

// checkKerberosRefusals: a ticket for another service, a replayed
// authenticator, an authenticator out of the clock skew and a node whose
// keytab is stale are refused with the status Samba gives them.
func checkKerberosRefusals(t *testing.T, kdc *framework.KDC, ccache string, c *framework.Cluster) {
	n1, n2 := c.Nodes[0], c.Nodes[1]
	cl := krbClient(t, kdc, ccache)

	t.Run("AnotherService", func(t *testing.T) {
		kdc.AddService(t, "cifs/other.test")
		if st := sessionSetup(t, n1.Addr, apReq(t, cl, "cifs/other.test", nil)); st != smb2.StatusLogonFailure {
			t.Errorf("ticket for cifs/other.test: %v, want STATUS_LOGON_FAILURE", st)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		// go-smb2 reports the status by its text only.
		_, err := goSMB2Kerberos(ctx, cl, n1.Addr, "cifs/other.test")
		if err == nil || !strings.Contains(err.Error(), "The attempted logon is invalid") {
			t.Errorf("go-smb2 with a ticket for cifs/other.test: %v, want STATUS_LOGON_FAILURE", err)
		}
	})
	t.Run("Replay", func(t *testing.T) {
		tok := apReq(t, cl, krbSPN, nil)
		if st := sessionSetup(t, n1.Addr, tok); st != smb2.StatusSuccess {
			t.Fatalf("first use of the authenticator: %v", st)
		}
		if st := sessionSetup(t, n1.Addr, tok); st != smb2.StatusLogonFailure {
			t.Errorf("replayed authenticator: %v, want STATUS_LOGON_FAILURE", st)
		}
		framework.WaitFor(t, clusterDeadline, "node1 to log the replay (KRB_AP_ERR_REPEAT)", func() bool {
			return strings.Contains(n1.Log(), "KRB_AP_ERR_REPEAT")
		})
	})
	t.Run("ClockSkew", func(t *testing.T) {
		tok := apReq(t, cl, krbSPN, func(a *types.Authenticator) { a.CTime = a.CTime.Add(-10 * time.Minute) })
		if st := sessionSetup(t, n2.Addr, tok); st != smb2.StatusTimeDifferenceAtDc {
			t.Errorf("authenticator 10 minutes old: %v, want STATUS_TIME_DIFFERENCE_AT_DC", st)
		}
	})
	t.Run("StaleKeytab", func(t *testing.T) {
		// ktadd gives the service new keys: the nodes' keytab is now stale.
		fresh := kdc.Keytab(t, krbSPN)
		// A new TGT: no service ticket cached under the old key.
		cl := krbClient(t, kdc, kdc.Kinit(t, user+"@"+krbRealm, password()))
		if st := sessionSetup(t, n2.Addr, apReq(t, cl, krbSPN, nil)); st != smb2.StatusLogonFailure {
			t.Errorf("ticket under a key the node lacks: %v, want STATUS_LOGON_FAILURE", st)
		}
		c.MustSMBCtl(t, "kerberos", "set-keytab", fresh, "--spn", krbSPN)
		framework.WaitFor(t, clusterDeadline, "the new keytab on node2", func() bool {
			return sessionSetup(t, n2.Addr, apReq(t, cl, krbSPN, nil)) == smb2.StatusSuccess
		})
	})
}

// TestKerberosExpiredTicket: a ticket past its end time (and the node's
// clock skew) is refused with STATUS_LOGON_FAILURE (KRB_AP_ERR_TKT_EXPIRED).
func TestKerberosExpiredTicket(t *testing.T) {
	kdc, keytab, _ := kerberosRealm(t)
	n := framework.StartNode(t, framework.Options{Args: []string{"--keytab", keytab, "--krb-clock-skew", "1s"}})
	ccache := kdc.Kinit(t, user+"@"+krbRealm, password(), "-l", "3s")
	cl := krbClient(t, kdc, ccache)
	tkt, key, err := cl.GetServiceTicket(krbSPN)
	if err != nil {
		t.Fatal(err)
	}
	cc, err := credentials.LoadCCache(ccache)
	if err != nil {
		t.Fatal(err)
	}
	var end time.Time // the TGT's, which bounds the service ticket's
	for _, e := range cc.Credentials {
		if e.EndTime.After(end) {
			end = e.EndTime
		}
	}
	if end.IsZero() || time.Until(end) > 10*time.Second {
		t.Fatalf("kinit -l 3s gave a ticket ending at %v", end)
	}
	build := func() []byte { return apReqToken(t, cl, tkt, key, nil) }
	if st := sessionSetup(t, n.Addr, build()); st != smb2.StatusSuccess {
		t.Fatalf("while the ticket is valid: %v", st)
	}
	framework.WaitFor(t, 30*time.Second, "the ticket to expire", func() bool {
		return time.Now().After(end.Add(2 * time.Second))
	})
	if st := sessionSetup(t, n.Addr, build()); st != smb2.StatusLogonFailure {
		t.Errorf("expired ticket: %v, want STATUS_LOGON_FAILURE", st)
	}
	framework.WaitFor(t, 10*time.Second, "the node to log KRB_AP_ERR_TKT_EXPIRED", func() bool {
		return strings.Contains(n.Log(), "KRB_AP_ERR_TKT_EXPIRED")
	})
}
