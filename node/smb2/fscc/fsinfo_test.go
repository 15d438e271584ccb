package fscc

import (
	"bytes"
	"encoding/hex"
	"testing"
)

func TestFsEncodings(t *testing.T) {
	cases := []struct {
		enc interface {
			Size() int
			Encode([]byte)
		}
		want string
	}{
		{&FsVolumeInformation{VolumeCreationTime: 1, VolumeSerialNumber: 0xABCD, SupportsObjects: false, VolumeLabel: "v"},
			"0100000000000000" + "cdab0000" + "02000000" + "00" + "00" + "7600"},
		{&FsSizeInformation{100, 50, 8, 512}, "6400000000000000" + "3200000000000000" + "08000000" + "00020000"},
		{&FsFullSizeInformation{100, 40, 50, 8, 512}, "6400000000000000" + "2800000000000000" + "3200000000000000" + "08000000" + "00020000"},
		{&FsDeviceInformation{FileDeviceDisk, FileDeviceIsMounted}, "07000000" + "20000000"},
		{&FsAttributeInformation{FileCaseSensitiveSearch | FileCasePreservedNames | FileUnicodeOnDisk |
			FilePersistentACLs | FileSupportsSparseFiles | FileNamedStreams, 255, "NTFS"},
			"4f000400" + "ff000000" + "08000000" + "4e00540046005300"},
		{&FsSectorSizeInformation{512, 4096, 4096, 4096, SSInfoFlagsAlignedDevice | SSInfoFlagsPartitionAlignedOnDevice, 0, 0},
			"00020000" + "00100000" + "00100000" + "00100000" + "03000000" + "00000000" + "00000000"},
		{&FsObjectIdInformation{ObjectID: [16]byte{1}}, "01" + hex.EncodeToString(make([]byte, 63))},
		{&FsControlInformation{DefaultQuotaThreshold: ^uint64(0), DefaultQuotaLimit: ^uint64(0), FileSystemControlFlags: 0x10},
			hex.EncodeToString(make([]byte, 24)) + "ffffffffffffffff" + "ffffffffffffffff" + "10000000" + "00000000"},
	}
	for _, c := range cases {
		b := bytes.Repeat([]byte{0xEE}, c.enc.Size())
		c.enc.Encode(b)
		if got := hex.EncodeToString(b); got != c.want {
			t.Errorf("%T: %s\nwant %s", c.enc, got, c.want)
		}
		if d, ok := c.enc.(decoder); ok {
			noPrefixDecodes(t, "fs", b, d)
			if err := d.Decode(b); err != nil {
				t.Errorf("%T: %v", d, err)
			}
		}
	}
	if FileSupportsObjectIDs != 0x10000 || FileSupportsExtendedAttributes != 0x800000 {
		t.Error("attribute flag values")
	}
}

func TestFsVolumeRoundTrip(t *testing.T) {
	in := FsVolumeInformation{VolumeCreationTime: 99, VolumeSerialNumber: 7, SupportsObjects: true, VolumeLabel: "share"}
	b := make([]byte, in.Size())
	in.Encode(b)
	var out FsVolumeInformation
	if err := out.Decode(b); err != nil || out != in {
		t.Fatalf("%v %+v", err, out)
	}
}
