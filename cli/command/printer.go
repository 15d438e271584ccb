package command

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// table is a value's rendering for -o table: an optional title line, then
// aligned columns.
type table struct {
	title  string
	header []string
	rows   [][]string
}

// printable is anything a command prints: -o json marshals the value
// itself (its JSON field names are the stable interface for scripts),
// -o table renders table().
type printable interface {
	table() table
}

// sectioned is a printable whose -o table rendering has several tables,
// separated by blank lines (status: a summary, then the nodes).
type sectioned interface {
	printable
	tables() []table
}

// printer writes values in the format chosen with -o.
type printer struct {
	w      io.Writer
	format string // "table" or "json"
}

// outputFlag registers -o on fs.
func outputFlag(fs *flag.FlagSet) *string {
	return fs.String("o", "table", "output `FORMAT`: table or json")
}

func newPrinter(w io.Writer, format string) (*printer, error) {
	if format != "table" && format != "json" {
		return nil, fmt.Errorf("-o %q: want table or json", format)
	}
	return &printer{w: w, format: format}, nil
}

func (p *printer) print(v printable) error {
	if p.format == "json" {
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return err
		}
		_, err = p.w.Write(append(b, '\n'))
		return err
	}
	ts := []table{v.table()}
	if s, ok := v.(sectioned); ok {
		ts = s.tables()
	}
	var b strings.Builder
	for i, t := range ts {
		if i > 0 {
			b.WriteString("\n")
		}
		renderTable(&b, t)
	}
	_, err := io.WriteString(p.w, b.String())
	return err
}

// renderTable writes t's title and aligned rows; a table without a
// header is a list of "Field:  value" lines.
func renderTable(b *strings.Builder, t table) {
	if t.title != "" {
		b.WriteString(t.title + "\n")
	}
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	rows := t.rows
	if t.header != nil {
		rows = append([][]string{t.header}, rows...)
	}
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	tw.Flush()
}
