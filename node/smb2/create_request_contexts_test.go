package smb2

import "testing"

// TestKnownContexts: each known context is decoded once into its field,
// the first of a name counts, undecodable ones are Bad, short names are
// flagged, and replacing Contexts decodes again.
func TestKnownContexts(t *testing.T) {
	lease := LeaseRequest{Key: [16]byte{1}, State: LeaseRead | LeaseHandle, Version: 1}
	app := make([]byte, 20)
	app[0], app[4] = 20, 0xaa
	alsi := []byte{0, 0x10, 0, 0, 0, 0, 0, 0}
	req := &CreateRequest{Contexts: []CreateContext{
		{Name: CreateCtxRequestLease, Data: lease.Append(nil)},
		{Name: CreateCtxRequestLease, Data: []byte{1}}, // a second one: ignored
		{Name: CreateCtxDurableHandleRequestV2, Data: []byte{1, 2}},
		{Name: CreateCtxAppInstanceID, Data: app},
		{Name: CreateCtxAllocationSize, Data: alsi},
		{Name: CreateCtxQueryMaximalAccess},
		{Name: "ab"},
	}}
	k := req.Known()
	if !k.Valid(CtxRequestLease) || k.Lease.Key != lease.Key || k.Lease.State != lease.State {
		t.Errorf("lease: valid %v, %+v", k.Valid(CtxRequestLease), k.Lease)
	}
	if !k.Present(CtxDurableRequestV2) || k.Valid(CtxDurableRequestV2) {
		t.Errorf("short DH2Q: present %v valid %v", k.Present(CtxDurableRequestV2), k.Valid(CtxDurableRequestV2))
	}
	if !k.Valid(CtxAppInstanceID) || k.AppInstanceID[0] != 0xaa {
		t.Errorf("AppInstanceId %x", k.AppInstanceID)
	}
	if k.AllocationSize != 0x1000 || !k.Present(CtxQueryMaximalAccess) || k.Present(CtxQueryOnDiskID) {
		t.Errorf("AlSi %#x, MxAc %v, QFid %v", k.AllocationSize, k.Present(CtxQueryMaximalAccess), k.Present(CtxQueryOnDiskID))
	}
	if !k.ShortName {
		t.Error("a 2-byte name is not flagged")
	}
	if req.Known() != k {
		t.Error("decoded twice")
	}
	req.Contexts = []CreateContext{{Name: CreateCtxTimewarpToken}}
	if k := req.Known(); !k.Present(CtxTimewarpToken) || k.Present(CtxRequestLease) || k.ShortName {
		t.Errorf("after replacing Contexts: %+v", k)
	}
}
