package fscc

import (
	"bytes"
	"encoding/hex"
	"testing"
)

func TestSIDString(t *testing.T) {
	tests := []struct {
		str string
		bin string
	}{
		// [MS-DTYP] 2.4.2.4 well-known SIDs, binary per 2.4.2.2.
		{"S-1-1-0", "010100000000000100000000"},
		{"S-1-5-18", "010100000000000512000000"},
		{"S-1-5-32-544", "01020000000000052000000020020000"},
		{"S-1-5-21-1004336348-1177238915-682003330-512",
			"010500000000000515000000dcf4dc3b833d2b46828ba62800020000"},
		{"S-1-22-1-1000", "010200000000001601000000e8030000"},
		{"S-1-0x123456789ABC-7", "0101123456789abc07000000"},
		{"S-1-0", "010000000000000000"[:16]},
	}
	for _, tt := range tests {
		s, err := ParseSID(tt.str)
		if err != nil {
			t.Fatalf("ParseSID(%q): %v", tt.str, err)
		}
		if s.String() != tt.str {
			t.Errorf("String() = %q, want %q", s.String(), tt.str)
		}
		b := make([]byte, s.Size())
		s.Encode(b)
		if hex.EncodeToString(b) != tt.bin {
			t.Errorf("%s: encode %x, want %s", tt.str, b, tt.bin)
		}
		var d SID
		if err := d.Decode(b); err != nil || !d.Equal(s) {
			t.Errorf("%s: decode %v %v", tt.str, err, d)
		}
		for n := range len(b) {
			if d.Decode(b[:n]) == nil {
				t.Errorf("%s: prefix %d decoded", tt.str, n)
			}
		}
	}
	for _, bad := range []string{"", "S", "S-1", "S-2-5-18", "X-1-5-18", "S-1-5-x", "S-1-4294967296-1",
		"S-1-5-1-2-3-4-5-6-7-8-9-10-11-12-13-14-15-16", "S-1-0x1000000000000-1", "S-1-5-4294967296"} {
		if _, err := ParseSID(bad); err == nil {
			t.Errorf("ParseSID(%q) succeeded", bad)
		}
	}
	if SIDEveryone.String() != "S-1-1-0" || SIDAdministrators.String() != "S-1-5-32-544" ||
		SIDSystem.String() != "S-1-5-18" || SIDCreatorOwner.String() != "S-1-3-0" ||
		SIDAuthenticatedUsers.String() != "S-1-5-11" || SIDUsers.String() != "S-1-5-32-545" {
		t.Error("well-known SID strings")
	}
	if UnixUserSID(1000).String() != "S-1-22-1-1000" || UnixGroupSID(7).String() != "S-1-22-2-7" {
		t.Error("unix SIDs")
	}
	if id, g, ok := UnixGroupSID(7).UnixID(); !ok || !g || id != 7 {
		t.Error("UnixID group")
	}
	if _, _, ok := SIDSystem.UnixID(); ok {
		t.Error("UnixID of S-1-5-18")
	}
}

// sdFullAccessEveryone is O:BAG:SYD:(A;;FA;;;WD) laid out owner, group,
// DACL as [MS-DTYP] 2.4.6 describes.
const sdFullAccessEveryone = "01000480" + "14000000" + "24000000" + "00000000" + "30000000" +
	"01020000000000052000000020020000" + // owner S-1-5-32-544
	"010100000000000512000000" + // group S-1-5-18
	"02001c0001000000" + // ACL rev 2, size 28, 1 ACE
	"00001400ff011f00" + "010100000000000100000000" // allow 0x1f01ff S-1-1-0

func TestSecurityDescriptorExact(t *testing.T) {
	owner, group := SIDAdministrators, SIDSystem
	sd := SecurityDescriptor{Owner: &owner, Group: &group, DACL: &ACL{ACEs: []ACE{
		{Type: AccessAllowedACEType, Mask: FileAllAccess, SID: SIDEveryone}}}}
	b := sd.Bytes()
	if hex.EncodeToString(b) != sdFullAccessEveryone {
		t.Fatalf("got  %x\nwant %s", b, sdFullAccessEveryone)
	}
	var d SecurityDescriptor
	if err := d.Decode(b); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(d.Bytes(), b) || d.Control != 0x8004 || !d.Owner.Equal(owner) || len(d.DACL.ACEs) != 1 {
		t.Fatalf("round trip %+v", d)
	}
	for n := range len(b) {
		if d.Decode(b[:n]) == nil {
			t.Fatalf("prefix %d decoded", n)
		}
	}
}

func TestSecurityDescriptorFilter(t *testing.T) {
	sd := DefaultSD(UnixUserSID(1000), UnixGroupSID(100), 0o750, false)
	sd.SACL = &ACL{ACEs: []ACE{{Type: SystemAuditACEType, Flags: FailedAccessACEFlag, Mask: FileAllAccess, SID: SIDEveryone}}}
	sd.Control |= SESACLPresent
	for _, tt := range []struct {
		secinfo                  uint32
		owner, group, dacl, sacl bool
	}{
		{OwnerSecurityInformation, true, false, false, false},
		{GroupSecurityInformation, false, true, false, false},
		{DACLSecurityInformation, false, false, true, false},
		{SACLSecurityInformation, false, false, false, true},
		{OwnerSecurityInformation | GroupSecurityInformation | DACLSecurityInformation, true, true, true, false},
		{0, false, false, false, false},
	} {
		var d SecurityDescriptor
		if err := d.Decode(sd.EncodeFiltered(tt.secinfo)); err != nil {
			t.Fatal(err)
		}
		if (d.Owner != nil) != tt.owner || (d.Group != nil) != tt.group || (d.DACL != nil) != tt.dacl || (d.SACL != nil) != tt.sacl {
			t.Errorf("secinfo %#x: %+v", tt.secinfo, d)
		}
		if (d.Control&SEDACLPresent != 0) != tt.dacl || (d.Control&SESACLPresent != 0) != tt.sacl || d.Control&SESelfRelative == 0 {
			t.Errorf("secinfo %#x: control %#x", tt.secinfo, d.Control)
		}
	}
}

func TestDefaultSD(t *testing.T) {
	owner, group := UnixUserSID(1000), UnixGroupSID(100)
	sd := DefaultSD(owner, group, 0o754, true)
	want := []ACE{
		{AccessAllowedACEType, 3, FileAllAccess, owner, nil},
		{AccessAllowedACEType, 3, 0x1200a9 | FileGenericRead, group, nil},
		{AccessAllowedACEType, 3, FileGenericRead, SIDEveryone, nil},
	}
	if len(sd.DACL.ACEs) != len(want) {
		t.Fatalf("ACEs %+v", sd.DACL.ACEs)
	}
	for i, a := range sd.DACL.ACEs {
		if a.Type != want[i].Type || a.Flags != want[i].Flags || a.Mask != want[i].Mask || !a.SID.Equal(want[i].SID) {
			t.Errorf("ACE %d = %+v, want %+v", i, a, want[i])
		}
	}
	if sd.DACL.ACEs[1].Mask != 0x1200a9 {
		t.Errorf("r-x = %#x, want 0x1200a9", sd.DACL.ACEs[1].Mask)
	}
	// 0600 file: owner rw + owner rights, nothing for group/everyone.
	sd = DefaultSD(owner, group, 0o600, false)
	if len(sd.DACL.ACEs) != 1 || sd.DACL.ACEs[0].Flags != 0 ||
		sd.DACL.ACEs[0].Mask != FileGenericRead|FileGenericWrite|ownerRights {
		t.Fatalf("0600: %+v", sd.DACL.ACEs)
	}
	if ModeMask(2, true) != 0x120116|FileDeleteChild || ModeMask(2, false) != 0x120116 || ModeMask(1, false) != 0x1200a0 {
		t.Error("ModeMask")
	}
	var d SecurityDescriptor
	if err := d.Decode(sd.Bytes()); err != nil || !bytes.Equal(d.Bytes(), sd.Bytes()) {
		t.Fatalf("round trip: %v", err)
	}
}

func TestACEOpaqueRoundTrip(t *testing.T) {
	// An object ACE and a callback ACE with application data survive
	// decode/encode byte for byte.
	obj := ACE{Type: AccessAllowedObjectACEType, Mask: 0x10, Extra: append([]byte{1, 0, 0, 0}, make([]byte, 16+12)...)}
	cb := ACE{Type: AccessAllowedCallbackACEType, Mask: 1, SID: SIDSystem, Extra: []byte{'a', 'r', 't', 'x'}}
	l := ACL{Revision: ACLRevisionDS, ACEs: []ACE{obj, cb}}
	b := make([]byte, l.Size())
	l.Encode(b)
	var d ACL
	if err := d.Decode(b); err != nil {
		t.Fatal(err)
	}
	b2 := make([]byte, d.Size())
	d.Encode(b2)
	if !bytes.Equal(b, b2) {
		t.Fatalf("%x\n%x", b, b2)
	}
}

func TestSecurityDescriptorBad(t *testing.T) {
	good, _ := hex.DecodeString(sdFullAccessEveryone)
	mut := func(f func(b []byte)) []byte {
		b := append([]byte(nil), good...)
		f(b)
		return b
	}
	for name, b := range map[string][]byte{
		"revision":     mut(func(b []byte) { b[0] = 2 }),
		"owner in hdr": mut(func(b []byte) { b[4] = 4 }),
		"owner beyond": mut(func(b []byte) { b[4] = 200 }),
		"dacl size":    mut(func(b []byte) { b[50] = 0xff }),
		"ace size":     mut(func(b []byte) { b[58] = 0xff }),
		"ace count":    mut(func(b []byte) { b[52] = 9 }),
		"sid count":    mut(func(b []byte) { b[21] = 16 }),
	} {
		var d SecurityDescriptor
		if d.Decode(b) == nil {
			t.Errorf("%s: decoded", name)
		}
	}
}

func FuzzSecurityDescriptor(f *testing.F) {
	good, _ := hex.DecodeString(sdFullAccessEveryone)
	f.Add(good)
	sd := DefaultSD(UnixUserSID(1), UnixGroupSID(2), 0o755, true)
	f.Add(sd.Bytes())
	f.Add([]byte{2, 0, 20, 0, 1, 0, 0, 0, 0, 0, 20, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		var l ACL
		if l.Decode(b) == nil && l.Size() > len(b) {
			t.Fatalf("ACL of %d bytes from %d", l.Size(), len(b))
		}
		var s SID
		_ = s.Decode(b)
		var d SecurityDescriptor
		if d.Decode(b) != nil {
			return
		}
		e1 := d.Bytes()
		var d2 SecurityDescriptor
		if err := d2.Decode(e1); err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		if e2 := d2.Bytes(); !bytes.Equal(e1, e2) {
			t.Fatalf("not a fixpoint:\n%x\n%x", e1, e2)
		}
		_ = d.EncodeFiltered(OwnerSecurityInformation | DACLSecurityInformation)
	})
}

func FuzzParseSID(f *testing.F) {
	f.Add("S-1-5-21-1-2-3")
	f.Add("S-1-0x123456789ABC-7")
	f.Fuzz(func(t *testing.T, s string) {
		sid, err := ParseSID(s)
		if err != nil {
			return
		}
		again, err := ParseSID(sid.String())
		if err != nil || !again.Equal(sid) {
			t.Fatalf("%q -> %q: %v", s, sid.String(), err)
		}
		var b = make([]byte, sid.Size())
		sid.Encode(b)
		var d SID
		if err := d.Decode(b); err != nil || !d.Equal(sid) {
			t.Fatalf("binary round trip of %q: %v", s, err)
		}
	})
}
