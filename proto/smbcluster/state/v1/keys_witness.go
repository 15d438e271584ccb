package statev1

import "strings"

// The witness part of the key layout ([MS-SWN] registrations; records in
// witness.proto):
//
//	/smbcluster/v1/witness/registrations/<id>      WitnessRegistrationRecord node that took it (no lease)
//	/smbcluster/v1/witness/waits/<id>/<node>       WitnessWaitRecord         node where the client waits, on its lease
//	/smbcluster/v1/witness/moves/<id>/<move>       WitnessMoveRecord         coordinator, on a 60 s lease
//
// <id> is the registration's context handle GUID in 32 lower-case hex
// digits; <move> is IDKeyPart of a random number.
//
// Every node watches WitnessPrefix: it mirrors the registrations (a client
// registers on one node and waits on another), queues a move for its
// registration and withdraws it when the key goes. The node that answers
// a client's AsyncNotify with a move deletes the move's key. A
// registration without a wait key for WitnessIdle (its client gone: a
// waiting client always has one, on the node it waits on, and finds
// another node within seconds when that one dies) is deleted by the live
// nodes, guarded by its mod revision.
const (
	WitnessPrefix              = Root + "witness/"
	WitnessRegistrationsPrefix = WitnessPrefix + "registrations/"
	WitnessWaitsPrefix         = WitnessPrefix + "waits/"
	WitnessMovesPrefix         = WitnessPrefix + "moves/"
)

// WitnessRegistrationKey is where registration id is kept.
func WitnessRegistrationKey(id string) string {
	return WitnessRegistrationsPrefix + strings.ToLower(id)
}

// WitnessWaitKey is where node says a client waits on it for registration id.
func WitnessWaitKey(id, node string) string {
	return WitnessWaitsPrefix + strings.ToLower(id) + "/" + strings.ToLower(node)
}

// WitnessMovesOf is the prefix of registration id's moves.
func WitnessMovesOf(id string) string { return WitnessMovesPrefix + strings.ToLower(id) + "/" }

// WitnessMoveKey is where move number move for registration id is kept.
func WitnessMoveKey(id string, move uint64) string { return WitnessMovesOf(id) + IDKeyPart(move) }
