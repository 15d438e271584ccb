package handoff

import "hash/fnv"

// Tag is node name's session tag (server.Config.SessionTag): the top 16
// bits of the ids of the sessions it makes, so that another node asks it,
// and only it, for one of them. Two nodes may share a tag (both are
// asked); none has tag 0, the tag of ids made without one (every node is
// asked).
func Tag(name string) uint16 {
	h := fnv.New32a()
	h.Write([]byte(name))
	x := h.Sum32()
	t := uint16(x>>16) ^ uint16(x)
	if t == 0 {
		t = 1
	}
	return t
}

// tagOf is the tag of session id.
func tagOf(id uint64) uint16 { return uint16(id >> 48) }
