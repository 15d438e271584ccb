package servertest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/smbcluster/smbcluster/node/auth"
	"github.com/smbcluster/smbcluster/node/server"
	"github.com/smbcluster/smbcluster/node/share"
	"github.com/smbcluster/smbcluster/node/vfs"
	"github.com/smbcluster/smbcluster/node/vfs/memfs"
	"github.com/smbcluster/smbcluster/node/vfs/osfs"
	"github.com/smbcluster/smbcluster/node/vfs/vfstest"
)

// The users every test server knows, with their passwords.
const (
	Alice         = "alice"
	AlicePassword = "Alice-Pa55"
	Bob           = "bob"
	BobPassword   = "B0b-Secret"
)

// Share names of the test server: ShareName is a plain disk share,
// EncShareName asks for encryption (SMB2_SHAREFLAG_ENCRYPT_DATA).
const (
	ShareName    = "share"
	EncShareName = "encshare"
	// CAShareName is a share with continuous availability (persistent
	// handles), over the same files as ShareName.
	CAShareName = "cashare"
	// DiskShareName is the osfs share of Options.DiskRoot.
	DiskShareName = "disk"
)

// Options configure a test server. The zero value serves dialects 2.0.2
// through 3.1.1 without required signing or encryption.
type Options struct {
	SigningRequired        bool
	Encryption             server.EncryptionMode
	MinDialect, MaxDialect uint16 // zero → the server's defaults
	MaxCredits             uint16 // zero → the server's default
	Interfaces             []server.Interface
	Control                *server.Control // what a cluster agent would change at run time
	// DiskRoot, when set, is served as DiskShareName by osfs, with no
	// tracking wrapper: its files are the backend's own (sendfile,
	// RWF_NOWAIT reads).
	DiskRoot string
	// TrackDisk wraps DiskRoot's osfs in a vfstest.Tracker (Server.Disk),
	// which counts its open files and their flushes (its files keep
	// their descriptors, but not RWF_NOWAIT reads).
	TrackDisk bool
	// DiskMount, when set, is the mount DiskRoot's share reports
	// (vfs.FSInfo.Mount): two servers over one directory with different
	// DiskMounts stand for two hosts' mounts of one filesystem.
	DiskMount string
	// SpliceWriteThreshold is server.Config's (zero: no spliced WRITEs).
	SpliceWriteThreshold int
	// Logf, when set, receives every log record (for debugging a test).
	Logf func(format string, args ...any)
	// Configure, when set, changes the configuration before the server
	// is made (limits and timeouts).
	Configure func(*server.Config)
	// Listener, when set, is served instead of 127.0.0.1:0 (a
	// net.Pipe-backed listener lets a testing/synctest bubble hold the
	// whole server).
	Listener net.Listener
}

// Server is a running test server.
type Server struct {
	*server.Server
	Addr    string           // host:port it listens on
	FS      *memfs.FS        // the shares' files
	Tracker *vfstest.Tracker // open files of FS
	Disk    *vfstest.Tracker // open files of DiskRoot, with Options.TrackDisk
	Log     *Recorder        // everything the server logged
	l       net.Listener     // closed by Shutdown
	served  chan error       // Serve's result
	cfg     server.Config    // as passed to server.New
	tb      testing.TB       // the test that started the server
	once    sync.Once
}

// Start serves on 127.0.0.1:0 until the test ends; then it shuts the server
// down and checks that no open leaked. Files on the shares are capped at
// MaxFileSize.
func Start(tb testing.TB, opts Options) *Server {
	tb.Helper()
	fsys := memfs.New()
	tr := vfstest.TrackOpens(capFS{fsys})
	rec := &Recorder{tb: tb, logf: opts.Logf}
	rec.init()
	log := slog.New(rec)
	resume := share.NewResumeKeys() // one per server, as on a node
	newDisk := func(name string, fsys vfs.FS) *share.Disk {
		d := share.NewDisk(name, fsys, false, log)
		d.SetResumeKeys(resume)
		return d
	}
	disk := newDisk(ShareName, tr.FS())
	shares := shareTable{
		ShareName:    {Name: ShareName, Backend: disk},
		EncShareName: {Name: EncShareName, Encrypt: true, Backend: newDisk(EncShareName, tr.FS())},
		CAShareName:  {Name: CAShareName, CA: true, Backend: newDisk(CAShareName, tr.FS())},
	}
	var dtr *vfstest.Tracker
	if opts.DiskRoot != "" {
		dfs, err := osfs.New(opts.DiskRoot)
		if err != nil {
			tb.Fatal(err)
		}
		var dvfs vfs.FS = dfs
		if opts.TrackDisk {
			dtr = vfstest.TrackOpens(dfs)
			dvfs = dtr.FS()
		}
		if opts.DiskMount != "" {
			dvfs = mountFS{dvfs, opts.DiskMount}
		}
		shares[DiskShareName] = &server.Share{Name: DiskShareName, Backend: newDisk(DiskShareName, dvfs)}
	}
	cfg := server.Config{
		ServerName:      "TESTSRV",
		Workgroup:       "TESTDOM",
		Users:           users{Alice: auth.NTHash(AlicePassword), Bob: auth.NTHash(BobPassword)},
		SigningRequired: opts.SigningRequired,
		Encryption:      opts.Encryption,
		MinDialect:      opts.MinDialect,
		MaxDialect:      opts.MaxDialect,
		MaxCredits:      opts.MaxCredits,
		Interfaces:      opts.Interfaces,
		Control:         opts.Control,
		Shares:          shares,

		SpliceWriteThreshold: opts.SpliceWriteThreshold,
		Logger:               log,
	}
	if opts.Configure != nil {
		opts.Configure(&cfg)
	}
	l := opts.Listener
	if l == nil {
		var err error
		if l, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			tb.Fatal(err)
		}
	}
	s := &Server{
		Server: server.New(cfg), Addr: l.Addr().String(), FS: fsys, Tracker: tr, Disk: dtr, Log: rec,
		l: l, served: make(chan error, 1), cfg: cfg, tb: tb,
	}
	go func() { s.served <- s.Serve(l) }()
	tb.Cleanup(s.stop)
	return s
}

// stop shuts the server down and checks for leaks and panics.
func (s *Server) stop() {
	s.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			s.tb.Errorf("servertest: shutdown: %v", err)
		}
		if err := <-s.served; !errors.Is(err, server.ErrServerClosed) {
			s.tb.Errorf("servertest: Serve returned %v", err)
		}
		if n := s.OpenCount(); n != 0 {
			s.tb.Errorf("servertest: %d open(s) leaked after shutdown", n)
		}
		s.Tracker.Check(s.tb)
		if s.Disk != nil {
			s.Disk.Check(s.tb)
		}
		s.Log.stop()
	})
}

// ServerConfig returns the configuration the server was started with.
func (s *Server) ServerConfig() server.Config { return s.cfg }

type users map[string][16]byte

func (u users) NTHash(user, _ string) ([16]byte, bool) {
	h, ok := u[strings.ToLower(user)]
	return h, ok
}

type shareTable map[string]*server.Share

func (t shareTable) Lookup(name string) (*server.Share, bool) {
	s, ok := t[strings.ToLower(name)]
	return s, ok
}

func (t shareTable) List() []*server.Share {
	out := make([]*server.Share, 0, len(t))
	for _, s := range t {
		out = append(out, s)
	}
	return out
}

// Recorder is a slog.Handler that keeps every record and fails the test
// when a record mentions a panic.
type Recorder struct {
	tb    testing.TB
	logf  func(string, ...any)
	attrs []slog.Attr

	mu      *sync.Mutex
	records *[]string
	stopped *bool
}

func (r *Recorder) init() {
	if r.mu == nil {
		r.mu, r.records, r.stopped = new(sync.Mutex), new([]string), new(bool)
	}
}

// Enabled records every level, Debug included.
func (r *Recorder) Enabled(context.Context, slog.Level) bool { return true }

// Handle records rec and fails the test if it mentions a panic.
func (r *Recorder) Handle(_ context.Context, rec slog.Record) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", rec.Level, rec.Message)
	for _, a := range r.attrs {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
	}
	rec.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	})
	line := b.String()
	r.mu.Lock()
	defer r.mu.Unlock()
	*r.records = append(*r.records, line)
	if r.logf != nil && !*r.stopped {
		r.logf("server: %s", line)
	}
	if strings.Contains(strings.ToLower(line), "panic") && !*r.stopped {
		r.tb.Errorf("servertest: the server logged a panic: %s", line)
	}
	return nil
}

// WithAttrs returns a handler that adds attrs to every record.
func (r *Recorder) WithAttrs(attrs []slog.Attr) slog.Handler {
	r.init()
	c := *r
	c.attrs = append(append([]slog.Attr(nil), r.attrs...), attrs...)
	return &c
}

// WithGroup is not needed by the server; groups are flattened.
func (r *Recorder) WithGroup(string) slog.Handler { return r }

// Records returns the records so far, one formatted line each.
func (r *Recorder) Records() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), *r.records...)
}

// Contains reports whether a record contains substr.
func (r *Recorder) Contains(substr string) bool {
	for _, l := range r.Records() {
		if strings.Contains(l, substr) {
			return true
		}
	}
	return false
}

func (r *Recorder) stop() {
	r.mu.Lock()
	*r.stopped = true
	r.mu.Unlock()
}

// mountFS is an FS on the mount Options.DiskMount names.
type mountFS struct {
	vfs.FS
	mount string
}

func (m mountFS) StatFS() (vfs.FSInfo, error) {
	st, err := m.FS.StatFS()
	st.Mount = m.mount
	return st, err
}
