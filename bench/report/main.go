// Command report reads the JSON lines bench/driver printed during
// bench/run (one per path and round) and prints the comparison table: per
// path the median over the rounds of requests/s, p50 and p99, then the
// ratios bench/README.md states aims for (issue 24), each also per round
// (the aims hold in every round), then the table of every round.
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
// The -base paths are another berth build (bench/run -B), measured in the
// same rounds for a before/after under the same load.
var order = []string{"direct-http", "berth-http", "berth-http-base", "supergateway-http", "mcp-proxy-http", "bare-stdio", "berth-stdio", "berth-stdio-base"}

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
	// Each ratio: of the medians, and per round (adjacent runs, less
	// sensitive to a machine whose speed drifts), with the worst round.
	ratio := func(label, aim string, better func(x float64) bool, a, b func(i int) (float64, bool)) {
		var xs []float64
		var parts []string
		for i := 0; ; i++ {
			x, ok1 := a(i)
			y, ok2 := b(i)
			if !ok1 || !ok2 {
				break
			}
			if y == 0 {
				continue
			}
			xs = append(xs, x/y)
			parts = append(parts, fmt.Sprintf("%.2f", x/y))
		}
		if len(xs) == 0 {
			return
		}
		met := 0
		for _, x := range xs {
			if better(x) {
				met++
			}
		}
		fmt.Printf("%-52s %5.2fx  aim %-8s met in %d/%d rounds (%s)\n", label, median(xs), aim, met, len(xs), strings.Join(parts, " "))
	}
	at := func(name string, get func(result) float64) func(int) (float64, bool) {
		return func(i int) (float64, bool) {
			if i >= len(byName[name]) {
				return 0, false
			}
			return get(byName[name][i]), true
		}
	}
	cpuAt := func(name string) func(int) (float64, bool) {
		return func(i int) (float64, bool) {
			if i >= len(serverCPU[name]) {
				return 0, false
			}
			return serverCPU[name][i], true
		}
	}
	getRPS := func(r result) float64 { return r.RPS }
	atLeast := func(v float64) func(float64) bool { return func(x float64) bool { return x >= v } }
	atMost := func(v float64) func(float64) bool { return func(x float64) bool { return x <= v } }
	fmt.Println("ratios (median of the per-round ratios; each round in brackets)")
	ratio("throughput berth --http / go-sdk direct", ">= 0.85x", atLeast(0.85), at("berth-http", getRPS), at("direct-http", getRPS))
	ratio("throughput berth --http / supergateway", ">= 2x", atLeast(2), at("berth-http", getRPS), at("supergateway-http", getRPS))
	ratio("throughput berth --http / mcp-proxy", ">= 1.3x", atLeast(1.3), at("berth-http", getRPS), at("mcp-proxy-http", getRPS))
	ratio("server CPU per call berth --http / direct", "<= 1.3x", atMost(1.3), cpuAt("berth-http"), cpuAt("direct-http"))
	ratio("stdio p50 round trip berth / bare", "-", func(float64) bool { return true }, at("berth-stdio", func(r result) float64 { return r.P50us }), at("bare-stdio", func(r result) float64 { return r.P50us }))
	ratio("throughput berth --http / berth-base --http", "-", atLeast(1), at("berth-http", getRPS), at("berth-http-base", getRPS))
	ratio("server CPU per call berth / berth-base", "-", atMost(1), cpuAt("berth-http"), cpuAt("berth-http-base"))
	// Added stdio latency: p50 of berth minus p50 of bare, per round.
	added := func(name string) {
		var xs []float64
		var parts []string
		for i := range min(len(byName[name]), len(byName["bare-stdio"])) {
			x := byName[name][i].P50us - byName["bare-stdio"][i].P50us
			xs = append(xs, x)
			parts = append(parts, fmt.Sprintf("%.0f", x))
		}
		if len(xs) == 0 {
			return
		}
		met := 0
		for _, x := range xs {
			if x <= 150 {
				met++
			}
		}
		fmt.Printf("%-52s %5.0f µs aim <= 150  met in %d/%d rounds (%s)\n", "stdio p50 added by "+name+" over bare", median(xs), met, len(xs), strings.Join(parts, " "))
	}
	added("berth-stdio")
	added("berth-stdio-base")

	fmt.Println()
	fmt.Println("every round (req/s, p50 ms, server CPU µs/call)")
	tw = tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	rounds := 0
	for _, rs := range byName {
		rounds = max(rounds, len(rs))
	}
	fmt.Fprint(tw, "path\t")
	for i := range rounds {
		fmt.Fprintf(tw, "round %d\t", i+1)
	}
	fmt.Fprintln(tw)
	for _, n := range order {
		rs := byName[n]
		if len(rs) == 0 {
			continue
		}
		fmt.Fprintf(tw, "%s\t", n)
		for i, r := range rs {
			cpu := "-"
			if i < len(serverCPU[n]) {
				cpu = fmt.Sprintf("%.0f", serverCPU[n][i])
			}
			fmt.Fprintf(tw, "%.0f / %.2f / %s\t", r.RPS, r.P50us/1000, cpu)
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
}
