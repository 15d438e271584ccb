package server

import (
	"testing"

	"github.com/smbcluster/smbcluster/node/smb2"
)

// FuzzParseDurable feeds arbitrary create context data under the durable
// handle and AppInstanceId names: parseDurable never panics, and a
// combination it accepts is one [MS-SMB2] 3.3.5.9.7/10/12 allow.
func FuzzParseDurable(f *testing.F) {
	f.Add(uint8(1), make([]byte, 16), []byte{})
	f.Add(uint8(4), (&smb2.DurableRequestV2{Timeout: 1000}).Append(nil), []byte{20, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16})
	f.Add(uint8(10), make([]byte, 36), make([]byte, 16))
	f.Fuzz(func(t *testing.T, mask uint8, data, app []byte) {
		names := []string{
			smb2.CreateCtxDurableHandleRequest, smb2.CreateCtxDurableHandleReconnect,
			smb2.CreateCtxDurableHandleRequestV2, smb2.CreateCtxDurableHandleReconnectV2,
		}
		req := &smb2.CreateRequest{Name: "f"}
		for i, n := range names {
			if mask&(1<<i) != 0 {
				req.Contexts = append(req.Contexts, smb2.CreateContext{Name: n, Data: data})
			}
		}
		if mask&0x10 != 0 {
			req.Contexts = append(req.Contexts, smb2.CreateContext{Name: smb2.CreateCtxAppInstanceID, Data: app})
		}
		for _, dialect := range []uint16{smb2.Dialect210, smb2.Dialect311} {
			d, err := parseDurable(dialect, req)
			if err != nil {
				continue
			}
			if d.rc1 && (d.v1 || d.v2 || d.rc2) || d.rc2 && (d.v1 || d.v2) || d.v1 && d.v2 {
				t.Fatalf("dialect %#x: accepted %+v", dialect, d)
			}
			if dialect < smb2.Dialect300 && (d.v2 || d.rc2 || d.hasAppInstance) {
				t.Fatalf("2.1 took a 3.x context: %+v", d)
			}
		}
	})
}
