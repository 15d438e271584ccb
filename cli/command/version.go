package command

import (
	"context"
	"flag"
	"runtime"
)

const versionUsage = `Usage: smbctl version [-o table|json]

Print smbctl's version.
`

type versionInfo struct {
	Version string `json:"version"`
	Go      string `json:"go"`
}

func (v versionInfo) table() table {
	return table{header: []string{"VERSION", "GO"}, rows: [][]string{{v.Version, v.Go}}}
}

// runVersion prints the version smbctl was built with.
func runVersion(ctx context.Context, e *env, args []string) int {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	out := outputFlag(fs)
	if code, ok := parseFlags(e, fs, versionUsage, args); !ok {
		return code
	}
	p, err := newPrinter(e.stdout, *out)
	if err != nil {
		return usageError(e, "version", err)
	}
	if err := p.print(versionInfo{Version: Version, Go: runtime.Version()}); err != nil {
		return ExitError
	}
	return ExitOK
}
