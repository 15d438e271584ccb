package clusapi

import (
	"context"
	"slices"
	"strings"
)

// Node states ([MS-CMRP] 3.1.4.2.69 ApiGetNodeState).
const (
	NodeUp      = 0 // ClusterNodeUp
	NodeDown    = 1 // ClusterNodeDown
	NodePaused  = 2 // ClusterNodePaused
	NodeJoining = 3 // ClusterNodeJoining
)

// Resource states ([MS-CMRP] 3.1.4.2.13 ApiGetResourceState).
const (
	ResourceOnline  = 2 // ClusterResourceOnline
	ResourceOffline = 3 // ClusterResourceOffline
)

// Group states ([MS-CMRP] 3.1.4.2.46 ApiGetGroupState).
const (
	GroupOnline        = 0 // ClusterGroupOnline
	GroupOffline       = 1 // ClusterGroupOffline
	GroupPartialOnline = 3 // ClusterGroupPartialOnline
)

// Enumeration types ([MS-CMRP] 2.2.2.11 CLUSTER_ENUM).
const (
	EnumNode     = 0x01 // CLUSTER_ENUM_NODE
	EnumResType  = 0x02 // CLUSTER_ENUM_RESTYPE
	EnumResource = 0x04 // CLUSTER_ENUM_RESOURCE
	EnumGroup    = 0x08 // CLUSTER_ENUM_GROUP
)

// Resource types, as Windows names them.
const (
	TypeNetName = "Network Name"
	TypeIP      = "IP Address"
)

// GroupName is the one group: the cluster's core resources.
const GroupName = "Cluster Group"

// State is the cluster as a Cluster read it, at one moment.
type State struct {
	// Name is the cluster's network name (its NetBIOS name).
	Name string
	// NetNameOnline: the network name (the client access point) is
	// online.
	NetNameOnline bool
	Nodes         []Node    // by name
	Addresses     []Address // by IP
}

// Node is one node of the cluster.
type Node struct {
	Name  string
	State uint32 // NodeUp, NodeDown, NodePaused
}

// Address is one public address a node was admitted with.
type Address struct {
	IP     string
	Home   string // the node admitted with it
	Holder string // the node serving it now; "" when none does
}

// Cluster is what the interface reads and changes.
type Cluster interface {
	// Read returns the cluster's state now.
	Read(ctx context.Context) (*State, error)
	// SetNetNameOnline takes the cluster's network name online or
	// offline on behalf of user.
	SetNetNameOnline(ctx context.Context, online bool, user string) error
}

// Resource is one resource of the model.
type Resource struct {
	Name  string
	Type  string
	State uint32
	Owner string // the node the resource is online on
	ID    string // a stable GUID string
}

// netNameID and the IP resources' ids are fixed: a resource's id names it
// for as long as it exists.
const netNameID = "6d4f6c1a-4e0b-4b0e-9a55-6e65744e616d"

// resources derives the resources of a state: the network name first,
// then each address's IP address resource. owner is the node answering,
// where the network name is said to be online.
func (s *State) resources(owner string) []Resource {
	nn := Resource{Name: s.Name, Type: TypeNetName, State: ResourceOffline, ID: netNameID}
	if s.NetNameOnline {
		nn.State, nn.Owner = ResourceOnline, owner
	}
	out := []Resource{nn}
	for _, a := range s.Addresses {
		r := Resource{Name: "IP Address " + a.IP, Type: TypeIP, State: ResourceOffline, ID: ipResourceID(a.IP)}
		if a.Holder != "" {
			r.State, r.Owner = ResourceOnline, a.Holder
		}
		out = append(out, r)
	}
	return out
}

// ipResourceID is a name-based GUID string for an address's resource.
func ipResourceID(ip string) string {
	var h uint64 = 14695981039346656037 // FNV-1a
	for i := 0; i < len(ip); i++ {
		h = (h ^ uint64(ip[i])) * 1099511628211
	}
	const hex = "0123456789abcdef"
	b := []byte("00000000-0000-4000-8000-000000000000")
	pos := []int{0, 1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 12, 24, 25, 26, 27}
	for _, p := range pos {
		b[p] = hex[h&0xf]
		h >>= 4
	}
	return string(b)
}

// CoreNetName is the name Windows gives the cluster's own network name
// resource; it names the network name here too.
const CoreNetName = "Cluster Name"

func (s *State) resource(name, owner string) (Resource, bool) {
	for i, r := range s.resources(owner) {
		if strings.EqualFold(r.Name, name) || (i == 0 && strings.EqualFold(name, CoreNetName)) {
			return r, true
		}
	}
	return Resource{}, false
}

func (s *State) node(name string) (Node, bool) {
	i := slices.IndexFunc(s.Nodes, func(n Node) bool { return strings.EqualFold(n.Name, name) })
	if i < 0 {
		return Node{}, false
	}
	return s.Nodes[i], true
}

// groupState is the Cluster Group's: online when all its resources are,
// partially online when some are.
func (s *State) groupState(owner string) uint32 {
	on, off := 0, 0
	for _, r := range s.resources(owner) {
		if r.State == ResourceOnline {
			on++
		} else {
			off++
		}
	}
	switch {
	case off == 0:
		return GroupOnline
	case on == 0:
		return GroupOffline
	}
	return GroupPartialOnline
}
