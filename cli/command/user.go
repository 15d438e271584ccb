package command

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"

	adminv1 "github.com/smbcluster/smbcluster/proto/smbcluster/admin/v1"
)

var userVerbs = []verb{
	{name: "add", args: "NAME", nargs: 1, summary: "create a user; the password is prompted for, or read from stdin", define: defineUserAdd},
	{name: "rm", args: "NAME", nargs: 1, summary: "delete a user (their sessions end)", define: defineUserRm},
	{name: "passwd", args: "NAME", nargs: 1, summary: "set a user's password (prompted for, or read from stdin)", define: defineUserPasswd},
	{name: "ls", nargs: 0, summary: "list users", define: defineUserLs},
	{name: "principals", args: "NAME [PRINCIPAL...]", nargs: -1, summary: "set the Kerberos principals (name@REALM) that log on as the user; none clears them", define: defineUserPrincipals},
}

func (c *call) users() adminv1.UserServiceClient { return adminv1.NewUserServiceClient(c.conn.cc) }

// userView is a user as smbctl prints it; its JSON names are stable.
type userView struct {
	Name               string   `json:"name"`
	CreateTime         string   `json:"create_time,omitempty"`
	PasswordChangeTime string   `json:"password_change_time,omitempty"`
	KerberosPrincipals []string `json:"kerberos_principals,omitempty"`
}

func userOf(u *adminv1.User) userView {
	return userView{Name: u.GetName(), CreateTime: fmtTime(u.GetCreateTime()),
		PasswordChangeTime: fmtTime(u.GetPasswordChangeTime()), KerberosPrincipals: u.GetKerberosPrincipals()}
}

func (u userView) table() table {
	t := kv("", "Name", u.Name, "Created", u.CreateTime, "Password changed", u.PasswordChangeTime)
	if len(u.KerberosPrincipals) > 0 {
		t.rows = append(t.rows, []string{"Kerberos principals:", strings.Join(u.KerberosPrincipals, ", ")})
	}
	return t
}

type userList []userView

func (l userList) table() table {
	t := table{header: []string{"NAME", "CREATED", "PASSWORD CHANGED"}}
	for _, u := range l {
		t.rows = append(t.rows, []string{u.Name, dash(u.CreateTime), dash(u.PasswordChangeTime)})
	}
	return t
}

// passwordFlags say where a new password comes from: a prompt without
// echo when stdin is a terminal, else stdin; --password only by choice.
type passwordFlags struct {
	fromStdin bool
	inArgv    string
}

func (f *passwordFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&f.fromStdin, "password-stdin", false, "read the password from the first line of standard input")
	fs.StringVar(&f.inArgv, "password", "", "the `PASSWORD` itself (discouraged: visible in ps and shell history)")
}

// password gets the new password for user.
func (f *passwordFlags) password(c *call, user string) (string, error) {
	switch {
	case f.inArgv != "" && f.fromStdin:
		return "", usagef("--password and --password-stdin exclude each other")
	case f.inArgv != "":
		fmt.Fprintf(c.e.stderr, "smbctl %s: warning: --password is visible to other users (ps) and kept in shell history; prefer the prompt or --password-stdin\n", c.name)
		return f.inArgv, nil
	case !f.fromStdin && c.e.stdinTTY:
		return promptPassword(c.e, user)
	}
	line, err := bufio.NewReader(c.e.stdin).ReadString('\n')
	if err != nil && line == "" {
		return "", errors.New("no password on standard input (pipe one in, or run in a terminal to be prompted)")
	}
	pw := strings.TrimRight(line, "\r\n")
	if pw == "" {
		return "", errors.New("empty password on standard input")
	}
	return pw, nil
}

// promptPassword asks twice, without echo.
func promptPassword(e *env, user string) (string, error) {
	pw, err := e.readSecret(fmt.Sprintf("New password for %s: ", user))
	if err != nil {
		return "", err
	}
	if pw == "" {
		return "", errors.New("empty password")
	}
	again, err := e.readSecret("Retype the password: ")
	if err != nil {
		return "", err
	}
	if again != pw {
		return "", errors.New("the passwords do not match")
	}
	return pw, nil
}

func defineUserAdd(fs *flag.FlagSet) action {
	var pf passwordFlags
	pf.register(fs)
	return func(ctx context.Context, c *call) error {
		pw, err := pf.password(c, c.args[0])
		if err != nil {
			return err
		}
		ctx, cancel := c.conn.rpcContext(ctx, 0)
		defer cancel()
		resp, err := c.users().CreateUser(ctx, &adminv1.CreateUserRequest{Name: c.args[0], Password: pw})
		if err != nil {
			return err
		}
		return c.p.print(userOf(resp.GetUser()))
	}
}

func defineUserPasswd(fs *flag.FlagSet) action {
	var pf passwordFlags
	pf.register(fs)
	return func(ctx context.Context, c *call) error {
		pw, err := pf.password(c, c.args[0])
		if err != nil {
			return err
		}
		ctx, cancel := c.conn.rpcContext(ctx, 0)
		defer cancel()
		resp, err := c.users().SetPassword(ctx, &adminv1.SetPasswordRequest{Name: c.args[0], Password: pw})
		if err != nil {
			return err
		}
		return c.p.print(userOf(resp.GetUser()))
	}
}

func defineUserRm(fs *flag.FlagSet) action {
	return func(ctx context.Context, c *call) error {
		ctx, cancel := c.conn.rpcContext(ctx, 0)
		defer cancel()
		if _, err := c.users().DeleteUser(ctx, &adminv1.DeleteUserRequest{Name: c.args[0]}); err != nil {
			return err
		}
		return c.p.print(done{Kind: "user", Name: c.args[0], Action: "removed"})
	}
}

func defineUserLs(fs *flag.FlagSet) action {
	return func(ctx context.Context, c *call) error {
		ctx, cancel := c.conn.rpcContext(ctx, 0)
		defer cancel()
		resp, err := c.users().ListUsers(ctx, &adminv1.ListUsersRequest{})
		if err != nil {
			return err
		}
		l := userList{}
		for _, u := range resp.GetUsers() {
			l = append(l, userOf(u))
		}
		return c.p.print(l)
	}
}

func defineUserPrincipals(fs *flag.FlagSet) action {
	return func(ctx context.Context, c *call) error {
		ctx, cancel := c.conn.rpcContext(ctx, 0)
		defer cancel()
		resp, err := c.users().SetPrincipals(ctx, &adminv1.SetPrincipalsRequest{Name: c.args[0], KerberosPrincipals: c.args[1:]})
		if err != nil {
			return err
		}
		return c.p.print(userOf(resp.GetUser()))
	}
}
