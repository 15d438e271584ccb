package share

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/smbcluster/smbcluster/node/server"
	"github.com/smbcluster/smbcluster/node/smb2"
	"github.com/smbcluster/smbcluster/node/smb2/fscc"
	"github.com/smbcluster/smbcluster/node/vfs/memfs"
)

// write writes one byte at 0 through o as the engine does (WriteRange,
// the backend's write, WriteDone).
func write(t *testing.T, o *open) {
	t.Helper()
	req := &smb2.WriteRequest{Length: 1}
	wr, err := o.WriteRange(&server.Request{}, req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wr.File.WriteAt([]byte("s"), wr.Off); err != nil {
		t.Fatal(err)
	}
	if err := o.WriteDone(req, wr.Off, 1); err != nil {
		t.Fatal(err)
	}
}

func lastWrite(t *testing.T, o *open) time.Time {
	t.Helper()
	fi, err := o.f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	return fi.LastWriteTime
}

func wantTime(t *testing.T, what string, got, want time.Time) {
	t.Helper()
	if !got.Equal(want) {
		t.Errorf("%s: LastWriteTime %v, want %v", what, got.Format(time.StampMilli), want.Format(time.StampMilli))
	}
}

// TestWriteTimeDelayed follows the LastWriteTime of a file through the
// WRITEs of one open step by step ([MS-FSA] 2.1.4.17 and its note, as
// smbtorture smb2.timestamps.delayed-1write and delayed-2write check
// against Windows): the first WRITE leaves the time, which moves
// writeTimeDelay later; a second WRITE leaves it; the CLOSE of an open
// that wrote since sets it to the close's time; the CLOSE of one that did
// not leaves it.
func TestWriteTimeDelayed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := NewDisk("data", memfs.NewWithClock(time.Now), false, nil)
		created := time.Now()
		o := infoOpen(t, d, "f", false, 0)
		time.Sleep(time.Second)
		write(t, o)
		wantTime(t, "after the first write", lastWrite(t, o), created)
		time.Sleep(writeTimeDelay / 2)
		wantTime(t, "before the delay", lastWrite(t, o), created)
		time.Sleep(writeTimeDelay)
		synctest.Wait()
		updated := created.Add(time.Second + writeTimeDelay)
		wantTime(t, "after the delay", lastWrite(t, o), updated)

		time.Sleep(time.Second)
		write(t, o)
		time.Sleep(3 * time.Second)
		synctest.Wait()
		wantTime(t, "after the second write", lastWrite(t, o), updated)
		other := infoOpen(t, d, "f", false, smb2.FileReadAttributes)
		wantTime(t, "through another open", lastWrite(t, other), updated)

		time.Sleep(2 * time.Second)
		closing := time.Now()
		o.Close(false)
		wantTime(t, "after the close", lastWrite(t, other), closing)

		// An open that wrote once and was updated: its close leaves it.
		o2 := infoOpen(t, d, "f", false, 0)
		write(t, o2)
		time.Sleep(writeTimeDelay + time.Second)
		synctest.Wait()
		updated = lastWrite(t, o2)
		time.Sleep(time.Second)
		o2.Close(false)
		wantTime(t, "close after the update", lastWrite(t, other), updated)
	})
}

// TestWriteTimeFlushed: a pending update is done at once by FLUSH, by
// SET_INFO of the end of file (which moves the time itself, even to the
// same size) and by any SET_INFO of FILE_BASIC_INFORMATION, even one of
// all zeros (smbtorture smb2.timestamps.delayed-write-vs-flush,
// -vs-seteof, -vs-setbasic); the CLOSE after leaves the time.
func TestWriteTimeFlushed(t *testing.T) {
	for _, tc := range []struct {
		name  string
		flush func(*open) error
	}{
		{"flush", func(o *open) error { return o.Flush(&server.Request{}) }},
		{"eof", func(o *open) error {
			return setFileInfo(o, fscc.FileEndOfFileInformation, &fscc.EndOfFileInformation{EndOfFile: 1})
		}},
		{"basic zero", func(o *open) error { return setFileInfo(o, fscc.FileBasicInformation, &fscc.BasicInformation{}) }},
		{"basic creation", func(o *open) error {
			return setFileInfo(o, fscc.FileBasicInformation, &fscc.BasicInformation{CreationTime: fscc.Filetime(time.Now().Add(-time.Hour))})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				d := NewDisk("data", memfs.NewWithClock(time.Now), false, nil)
				created := time.Now()
				o := infoOpen(t, d, "f", false, 0)
				time.Sleep(time.Second)
				write(t, o)
				wantTime(t, "after the write", lastWrite(t, o), created)
				time.Sleep(time.Second)
				if err := tc.flush(o); err != nil {
					t.Fatal(err)
				}
				flushed := created.Add(2 * time.Second)
				wantTime(t, "after "+tc.name, lastWrite(t, o), flushed)
				time.Sleep(2 * writeTimeDelay)
				synctest.Wait()
				other := infoOpen(t, d, "f", false, smb2.FileReadAttributes)
				o.Close(false)
				wantTime(t, "after the close", lastWrite(t, other), flushed)
			})
		})
	}
}

// TestWriteTimeSticky: a LastWriteTime set through SET_INFO stays through
// the open's WRITEs, set EOF, FLUSH and CLOSE ([MS-FSA] 2.1.5.14.2:
// Open.UserSetModificationTime); -1 keeps the time as it is, -2 resumes
// the updates; a time past 2262 (a 64-bit time_t beyond int64
// nanoseconds) is kept exactly.
func TestWriteTimeSticky(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := NewDisk("data", memfs.NewWithClock(time.Now), false, nil)
		o := infoOpen(t, d, "f", false, 0)
		set := time.Now().Add(24 * time.Hour).Truncate(100 * time.Nanosecond)
		if err := setFileInfo(o, fscc.FileBasicInformation, &fscc.BasicInformation{LastWriteTime: fscc.Filetime(set)}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		write(t, o)
		time.Sleep(2 * writeTimeDelay)
		synctest.Wait()
		wantTime(t, "write after set", lastWrite(t, o), set)
		if err := setFileInfo(o, fscc.FileEndOfFileInformation, &fscc.EndOfFileInformation{EndOfFile: 10}); err != nil {
			t.Fatal(err)
		}
		wantTime(t, "set EOF after set", lastWrite(t, o), set)
		o.Flush(&server.Request{})
		write(t, o)
		wantTime(t, "flush and write after set", lastWrite(t, o), set)
		other := infoOpen(t, d, "f", false, smb2.FileReadAttributes)
		o.Close(false)
		wantTime(t, "close after set", lastWrite(t, other), set)

		// -1: the time stays as it is; -2: updates again.
		o = infoOpen(t, d, "f", false, 0)
		if err := setFileInfo(o, fscc.FileBasicInformation, &fscc.BasicInformation{LastWriteTime: fscc.FiletimeStopUpdating}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		write(t, o)
		time.Sleep(2 * writeTimeDelay)
		synctest.Wait()
		wantTime(t, "write after -1", lastWrite(t, o), set)
		if err := setFileInfo(o, fscc.FileBasicInformation, &fscc.BasicInformation{LastWriteTime: fscc.FiletimeResumeUpdating}); err != nil {
			t.Fatal(err)
		}
		write(t, o)
		time.Sleep(time.Second)
		closing := time.Now()
		o.Close(false)
		wantTime(t, "close after -2 and a write", lastWrite(t, other), closing)
	})
}
