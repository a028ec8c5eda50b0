// Command report reads the JSON lines bench/driver printed during
// bench/run (one per path and round) and prints the comparison table: per
// path the median over the rounds of requests/s, p50 and p99, then the
// ratios bench/README.md states aims for.
//
//	report results.jsonl
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/berth-mcp/berth/bench/internal/benchfmt"
)

// result is a line of results.jsonl: a driver run, or the CPU time of a
// server that follows it.
type result struct {
	benchfmt.Result
	// A line {"cpu_of": NAME, "ticks": T, "hz": HZ} follows an HTTP run:
	// the CPU time the server's process tree used during it.
	CPUOf string  `json:"cpu_of"`
	Ticks float64 `json:"ticks"`
	HZ    float64 `json:"hz"`
}

// The paths bench/run measures, in the order of the table.
var order = []string{"direct-http", "berth-http", "supergateway-http", "mcp-proxy-http", "bare-stdio", "berth-stdio"}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func main() {
	if len(os.Args) != 2 {
		log.Fatal("usage: report results.jsonl")
	}
	f, err := os.Open(os.Args[1])
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	byName := map[string][]result{}
	serverCPU := map[string][]float64{} // µs per call
	sc := bufio.NewScanner(f)
	var last result
	for sc.Scan() {
		var r result
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			continue
		}
		switch {
		case r.CPUOf != "" && r.CPUOf == last.Name && last.TotalCalls > 0 && r.HZ > 0:
			serverCPU[r.CPUOf] = append(serverCPU[r.CPUOf], r.Ticks/r.HZ*1e6/float64(last.TotalCalls))
		case r.Name != "":
			byName[r.Name] = append(byName[r.Name], r)
			last = r
		}
	}
	col := func(name string, get func(result) float64) float64 {
		var xs []float64
		for _, r := range byName[name] {
			xs = append(xs, get(r))
		}
		return median(xs)
	}
	rps := func(n string) float64 { return col(n, func(r result) float64 { return r.RPS }) }
	p50 := func(n string) float64 { return col(n, func(r result) float64 { return r.P50us }) }
	p99 := func(n string) float64 { return col(n, func(r result) float64 { return r.P99us }) }

	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "path\tworkers\trounds\treq/s (median)\tp50 ms\tp99 ms\terrors\tserver CPU µs/call\tclient CPU µs/call\t")
	for _, n := range order {
		rs := byName[n]
		if len(rs) == 0 {
			continue
		}
		errs := 0
		for _, r := range rs {
			errs += r.Errors
		}
		srv := "-"
		if xs := serverCPU[n]; len(xs) > 0 {
			srv = fmt.Sprintf("%.0f", median(xs))
		}
		cli := col(n, func(r result) float64 {
			if r.TotalCalls == 0 {
				return 0
			}
			return r.ClientCPU * 1e6 / float64(r.TotalCalls)
		})
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.0f\t%.2f\t%.2f\t%d\t%s\t%.0f\t\n", n, rs[0].Workers, len(rs), rps(n), p50(n)/1000, p99(n)/1000, errs, srv, cli)
	}
	tw.Flush()

	fmt.Println()
	ratio := func(label string, a, b float64, aim string) {
		if a == 0 || b == 0 {
			return
		}
		fmt.Printf("%-58s %5.2fx   (aim %s)\n", label, a/b, aim)
	}
	// Per-round ratios of adjacent runs are less sensitive to a noisy
	// machine than ratios of medians; print both for berth vs direct.
	var perRound []string
	var rr []float64
	for i := range min(len(byName["berth-http"]), len(byName["direct-http"])) {
		x := byName["berth-http"][i].RPS / byName["direct-http"][i].RPS
		rr = append(rr, x)
		perRound = append(perRound, fmt.Sprintf("%.2f", x))
	}
	ratio("throughput berth serve --http / go-sdk direct", rps("berth-http"), rps("direct-http"), ">= 0.8x")
	if len(rr) > 0 {
		fmt.Printf("%-58s %5.2fx   (rounds: %s)\n", "  same, median of per-round ratios", median(rr), strings.Join(perRound, " "))
	}
	ratio("throughput berth serve --http / supergateway", rps("berth-http"), rps("supergateway-http"), ">= 2x")
	ratio("throughput berth serve --http / mcp-proxy", rps("berth-http"), rps("mcp-proxy-http"), ">= 2x")
	ratio("stdio median round trip berth serve / bare echo server", p50("berth-stdio"), p50("bare-stdio"), "lower is better")
}
