package command

import (
	"fmt"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"
)

// fmtTime renders a timestamp as RFC 3339 in UTC, or "" if unset.
func fmtTime(ts *timestamppb.Timestamp) string {
	if ts == nil {
		return ""
	}
	return ts.AsTime().UTC().Format(time.RFC3339)
}

// dash stands in for an empty table cell.
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// kv is a table of "Field:  value" lines.
func kv(title string, pairs ...string) table {
	t := table{title: title}
	for i := 0; i+1 < len(pairs); i += 2 {
		t.rows = append(t.rows, []string{pairs[i] + ":", dash(pairs[i+1])})
	}
	return t
}

// done reports a change that returns nothing to show: "share "x" removed".
type done struct {
	Kind   string `json:"kind"`
	Name   string `json:"name"`
	Action string `json:"action"`
}

func (d done) table() table {
	return table{title: fmt.Sprintf("%s %q %s", d.Kind, d.Name, d.Action)}
}

// stringList is a repeatable flag; each value may also be comma-separated.
type stringList []string

func (l *stringList) String() string { return strings.Join(*l, ",") }

func (l *stringList) Set(s string) error {
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			*l = append(*l, v)
		}
	}
	return nil
}

// fmtBytes renders a byte count for people: "512 B", "1.5 MiB".
func fmtBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTP"[exp])
}
