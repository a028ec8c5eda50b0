// Command berthprof is the berth CLI with profiling, for finding where
// `berth serve` spends its time in the benchmarks (bench/run -profile):
// with BERTH_CPUPROFILE=FILE it writes a CPU profile of the whole run, and
// with BERTH_PPROF=ADDR it serves net/http/pprof on ADDR. It exits when
// berth does (serve stops on SIGINT or SIGTERM), after writing the profile.
//
//	go build -o berthprof ./bench/berthprof
//	BERTH_CPUPROFILE=cpu.out berthprof serve --http 127.0.0.1:8931 & ...; kill %1
//	go tool pprof -top berthprof cpu.out
package main

import (
	"log"
	"net/http"
	_ "net/http/pprof"
	"os"
	"runtime/pprof"

	"github.com/berth-mcp/berth/internal/cli"
)

func main() {
	if addr := os.Getenv("BERTH_PPROF"); addr != "" {
		go func() { log.Println(http.ListenAndServe(addr, nil)) }()
	}
	if path := os.Getenv("BERTH_CPUPROFILE"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			log.Fatal(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			log.Fatal(err)
		}
		code := cli.Main()
		pprof.StopCPUProfile()
		f.Close()
		os.Exit(code)
	}
	os.Exit(cli.Main())
}
