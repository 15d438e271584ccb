package command

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"

	adminv1 "github.com/smbcluster/smbcluster/proto/smbcluster/admin/v1"
)

var kerberosVerbs = []verb{
	{name: "set-keytab", args: "FILE", nargs: 1, summary: "make FILE (kadmin ktadd -k FILE) the cluster's service keytab; every node accepts its principals", define: defineKerberosSetKeytab},
	{name: "get", nargs: 0, summary: "show the keytab's principals, versions and enctypes (never the keys)", define: defineKerberosGet},
	{name: "rm", nargs: 0, summary: "remove the cluster's keytab (nodes fall back to their --keytab)", define: defineKerberosRm},
}

func (c *call) cluster() adminv1.ClusterServiceClient {
	return adminv1.NewClusterServiceClient(c.conn.cc)
}

// keytabView is a keytab as smbctl prints it; its JSON names are stable.
type keytabView struct {
	SPNs       []string         `json:"spns"`
	Entries    []keytabEntryOut `json:"entries"`
	UpdateTime string           `json:"update_time,omitempty"`
}

type keytabEntryOut struct {
	Principal string `json:"principal"`
	KVNO      uint32 `json:"kvno"`
	Enctype   string `json:"enctype"`
}

func keytabOf(k *adminv1.Keytab) keytabView {
	v := keytabView{SPNs: k.GetSpns(), Entries: []keytabEntryOut{}, UpdateTime: fmtTime(k.GetUpdateTime())}
	if v.SPNs == nil {
		v.SPNs = []string{}
	}
	for _, e := range k.GetEntries() {
		v.Entries = append(v.Entries, keytabEntryOut{Principal: e.GetPrincipal(), KVNO: e.GetKvno(), Enctype: e.GetEnctype()})
	}
	return v
}

func (k keytabView) table() table {
	spns := strings.Join(k.SPNs, ", ")
	if spns == "" {
		spns = "(every principal of the keytab)"
	}
	t := table{title: fmt.Sprintf("Accepted: %s\nUpdated: %s", spns, dash(k.UpdateTime)), header: []string{"PRINCIPAL", "KVNO", "ENCTYPE"}}
	for _, e := range k.Entries {
		t.rows = append(t.rows, []string{e.Principal, fmt.Sprint(e.KVNO), e.Enctype})
	}
	return t
}

func defineKerberosSetKeytab(fs *flag.FlagSet) action {
	var spns listFlag
	fs.Var(&spns, "spn", "accept only service `PRINCIPAL` (e.g. cifs/files.example.com; repeatable; default: every principal of the keytab)")
	return func(ctx context.Context, c *call) error {
		b, err := os.ReadFile(c.args[0])
		if err != nil {
			return usagef("%v", err)
		}
		ctx, cancel := c.conn.rpcContext(ctx, 0)
		defer cancel()
		resp, err := c.cluster().SetKeytab(ctx, &adminv1.SetKeytabRequest{Keytab: b, Spns: spns})
		if err != nil {
			return err
		}
		return c.p.print(keytabOf(resp.GetKeytab()))
	}
}

func defineKerberosGet(fs *flag.FlagSet) action {
	return func(ctx context.Context, c *call) error {
		ctx, cancel := c.conn.rpcContext(ctx, 0)
		defer cancel()
		resp, err := c.cluster().GetKeytab(ctx, &adminv1.GetKeytabRequest{})
		if err != nil {
			return err
		}
		return c.p.print(keytabOf(resp.GetKeytab()))
	}
}

func defineKerberosRm(fs *flag.FlagSet) action {
	return func(ctx context.Context, c *call) error {
		ctx, cancel := c.conn.rpcContext(ctx, 0)
		defer cancel()
		if _, err := c.cluster().DeleteKeytab(ctx, &adminv1.DeleteKeytabRequest{}); err != nil {
			return err
		}
		return c.p.print(done{Kind: "keytab", Name: "cluster", Action: "removed"})
	}
}

// listFlag is a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }
