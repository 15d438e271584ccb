package smb2

import (
	"os"
	"testing"
)

func mustRead(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// decoders lists every decoder; each must survive any input.
func decoders() []func([]byte) error {
	ds := []func([]byte) error{
		func(b []byte) error { _, err := DecodeWriteHeader(b); return err },
		func(b []byte) error { _, err := DecodeOplockBreak(b); return err },
		func(b []byte) error { _, err := DecodeSMB1Negotiate(b); return err },
		func(b []byte) error { _, err := DecodeCreateContexts(b); return err },
		func(b []byte) error { _, err := SplitCompound(b); return err },
		func(b []byte) error { return (&ReadResponse{}).Decode(b) },
		func(b []byte) error { return (&Header{}).Decode(b) },
	}
	for _, c := range cases() {
		ds = append(ds, func(b []byte) error { return c.out().Decode(b) })
	}
	payloads := []interface{ Decode([]byte) error }{
		&PreauthIntegrity{}, &EncryptionCaps{}, &SigningCaps{}, &CompressionCaps{}, &TransportCaps{}, &Netname{},
		&MxAcRequest{}, &MxAcResponse{}, &QFidResponse{}, &AllocationSizeRequest{}, &TimewarpRequest{},
		&LeaseRequest{}, &LeaseResponse{}, &DurableRequest{}, &DurableResponse{}, &DurableReconnect{},
		&DurableRequestV2{}, &DurableResponseV2{}, &DurableReconnectV2{},
	}
	for _, p := range payloads {
		ds = append(ds, p.Decode)
	}
	return ds
}

// FuzzDecodeRequests feeds every decoder the same bytes, both as a whole
// PDU and with a valid header in front of them.
func FuzzDecodeRequests(f *testing.F) {
	for _, c := range cases() {
		f.Add(pdu(c.cmd, c.in, 0))
	}
	f.Add(EncodeSMB1Negotiate([]string{"SMB 2.002", "SMB 2.???"}))
	ds := decoders()
	f.Fuzz(func(t *testing.T, b []byte) {
		withHeader := make([]byte, HeaderSize+len(b))
		(&Header{}).Encode(withHeader)
		copy(withHeader[HeaderSize:], b)
		for _, d := range ds {
			d(b)
			d(withHeader)
		}
	})
}

func FuzzSplitCompound(f *testing.F) {
	a := pdu(CmdCreate, &CreateRequest{Name: "x"}, 0)
	le.PutUint32(a[20:], uint32(align8(len(a))))
	a = append(a, make([]byte, align8(len(a))-len(a))...)
	f.Add(append(a, pdu(CmdClose, &CloseRequest{}, 0)...))
	f.Add(pdu(CmdEcho, &EchoRequest{}, 0))
	f.Fuzz(func(t *testing.T, b []byte) {
		pdus, err := SplitCompound(b)
		if err != nil {
			return
		}
		total := 0
		for i, p := range pdus {
			if len(p) < HeaderSize || (i < len(pdus)-1 && len(p)%8 != 0) {
				t.Fatalf("pdu %d has %d bytes", i, len(p))
			}
			total += len(p)
		}
		if total != len(b) {
			t.Fatalf("pdus cover %d of %d bytes", total, len(b))
		}
	})
}
