package ipc

import (
	"errors"
	"testing"
)

// FuzzSrvsvcStub decodes arbitrary stub data as the [in] parameters of every
// srvsvc and wkssvc opnum.
func FuzzSrvsvcStub(f *testing.F) {
	f.Add(uint16(15), shareEnumStub(1))
	f.Add(uint16(36), shareEnumStub(502))
	f.Add(uint16(16), getInfoStub("data", 2))
	f.Add(uint16(21), getInfoStub("", 102)[8:])
	f.Add(uint16(12), append(make([]byte, 8), shareEnumStub(10)...))
	env := testEnv()
	srv, wks := srvsvcInterface(env), wkssvcInterface(env)
	f.Fuzz(func(t *testing.T, opnum uint16, stub []byte) {
		for _, i := range [...]func(uint16, []byte) ([]byte, uint32){srv.Call, wks.Call} {
			out, fault := i(opnum, stub)
			if fault == 0 && len(out) < 4 {
				t.Fatalf("opnum %d: success with %d bytes", opnum, len(out))
			}
		}
	})
}

// FuzzPipe writes arbitrary bytes to a bound srvsvc pipe, in two writes,
// and drains the output in small reads.
func FuzzPipe(f *testing.F) {
	f.Add(requestPDU(2, 0, 15, shareEnumStub(1)), 10)
	f.Add(requestPDU(3, 0, 16, getInfoStub("IPC$", 1)), 100)
	f.Add(unhex(f, windowsBind), 0)
	f.Fuzz(func(t *testing.T, data []byte, split int) {
		p := open(t, "srvsvc", testEnv())
		if _, err := p.Write(unhex(t, windowsBind)); err != nil {
			t.Fatal(err)
		}
		split = min(max(split, 0), len(data))
		for _, part := range [][]byte{data[:split], data[split:]} {
			if _, err := p.Write(part); err != nil && !errors.Is(err, ErrProtocol) && !errors.Is(err, ErrPipeBusy) {
				t.Fatalf("Write: %v", err)
			}
		}
		for {
			b, more, err := p.Read(97)
			if err != nil {
				return
			}
			if len(b) > 97 || (more && len(b) != 97) {
				t.Fatalf("Read returned %d bytes, more=%v", len(b), more)
			}
		}
	})
}
