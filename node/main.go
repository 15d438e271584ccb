package main

import (
	"context"
	"os"

	"github.com/smbcluster/smbcluster/node/nodemain"
)

func main() {
	os.Exit(nodemain.Run(context.Background(), os.Args[1:]))
}
