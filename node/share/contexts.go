package share

import "github.com/smbcluster/smbcluster/node/smb2"

// checkContexts validates the create contexts of a CREATE before anything
// happens to the file ([MS-SMB2] 3.3.5.9): a context name shorter than 4
// bytes is invalid (Windows; smbtorture smb2.create.blob), and a
// timewarp token ("TWrp", [MS-SMB2] 3.3.5.9.5) names a snapshot, of which
// the share has none (FSCTL_SRV_ENUMERATE_SNAPSHOTS lists none).
func checkContexts(req *smb2.CreateRequest) error {
	k := req.Known()
	if k.ShortName {
		return smb2.StatusInvalidParameter
	}
	if k.Present(smb2.CtxTimewarpToken) {
		return smb2.StatusObjectNameNotFound
	}
	return nil
}
