package nodemain

import (
	"errors"

	"github.com/smbcluster/smbcluster/node/smb2"
)

// ntstatusOf is the NTSTATUS with which a node refuses a durable
// reconnect through another node (server.SurrenderDurable), as it
// crosses to that node.
func ntstatusOf(err error) (uint32, bool) {
	var st smb2.Status
	if errors.As(err, &st) {
		return uint32(st), true
	}
	return 0, false
}
