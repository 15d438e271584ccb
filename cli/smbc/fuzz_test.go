package smbc

import (
	"encoding/binary"
	"net"
	"testing"

	"github.com/smbcluster/smbcluster/node/smb2"
	"github.com/smbcluster/smbcluster/node/smb2/signing"
	"github.com/smbcluster/smbcluster/node/sockio"
)

// frame returns a transport frame holding an SMB2 response to message id
// with the given command, status and body.
func frame(cmd smb2.Command, id uint64, status smb2.Status, body []byte) []byte {
	h := smb2.Header{Command: cmd, MessageID: id, Status: uint32(status), Credits: 1, Flags: smb2.FlagServerToRedir}
	b := make([]byte, smb2.TransportHeaderSize+smb2.HeaderSize, smb2.TransportHeaderSize+smb2.HeaderSize+len(body))
	h.Encode(b[smb2.TransportHeaderSize:])
	b = append(b, body...)
	smb2.PutTransportHeader(b, len(b)-smb2.TransportHeaderSize)
	return b
}

// FuzzReceive feeds arbitrary bytes to the receiver of a connection with a
// READ and a CREATE outstanding: whatever a server sends, the receiver
// never panics, never writes past a READ's buffer, and every waiting call
// ends, with its response or an error.
func FuzzReceive(f *testing.F) {
	read := make([]byte, smb2.ReadResponseFixedSize)
	binary.LittleEndian.PutUint16(read, 17)
	read[2] = smb2.ReadResponseDataOffset
	binary.LittleEndian.PutUint32(read[4:], 8)
	read = append(read, "abcdefgh"...)
	f.Add(append(frame(smb2.CmdRead, 0, smb2.StatusSuccess, read), frame(smb2.CmdCreate, 1, smb2.StatusSuccess, make([]byte, 89))...), false, false)
	f.Add(frame(smb2.CmdRead, 0, smb2.StatusEndOfFile, make([]byte, 9)), true, false)
	f.Add(frame(smb2.CmdCreate, ^uint64(0), smb2.StatusSuccess, make([]byte, 24)), false, true)
	f.Add([]byte{0, 0, 0, 60, 0xfd, 'S', 'M', 'B'}, false, true)
	f.Fuzz(func(t *testing.T, in []byte, sign, encrypt bool) {
		srv, cli := net.Pipe()
		c := &Conn{nc: cli, br: sockio.NewReader(cli, 4096), bw: sockio.NewWriter(cli), calls: map[uint64]*call{}, recvDone: make(chan struct{}),
			dialect: smb2.Dialect311, avail: 16, o: Options{Credits: 16}}
		c.cond.L = &c.mu
		c.recv.c = c
		key := make([]byte, 16)
		c.signer, _ = signing.NewSigner(signing.AESGMAC, key)
		c.sign = sign
		if encrypt {
			c.dec, _ = signing.NewCipher(signing.AES128GCM, key)
			c.encrypt = true
		}
		dst := make([]byte, 16)
		guard := dst[8:]
		rd := &call{done: make(chan struct{}, 1), dst: dst[:8], charge: 1}
		cr := &call{done: make(chan struct{}, 1), charge: 1}
		c.calls[0], c.calls[1] = rd, cr
		go func() {
			srv.Write(in)
			srv.Close()
		}()
		c.recvLoop()
		<-rd.done
		<-cr.done
		if rd.n > 8 || string(guard) != string(make([]byte, 8)) {
			t.Fatalf("READ data past its buffer: n=%d", rd.n)
		}
	})
}
