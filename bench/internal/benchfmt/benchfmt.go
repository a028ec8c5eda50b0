// Package benchfmt is the JSON line bench/driver prints for one run and
// bench/report reads back.
package benchfmt

// Result is one measured run of the driver.
type Result struct {
	Name     string  `json:"name"`
	Workers  int     `json:"workers"`
	Requests int     `json:"requests"`
	Errors   int     `json:"errors"`
	Seconds  float64 `json:"seconds"`
	RPS      float64 `json:"rps"`
	P50us    float64 `json:"p50_us"`
	P99us    float64 `json:"p99_us"`
	// TotalCalls counts every call made, warm-up included, and ClientCPU
	// is the driver's own CPU time: with a server's CPU time over the same
	// span they give CPU per call.
	TotalCalls int64   `json:"total_calls"`
	ClientCPU  float64 `json:"client_cpu_s"`
}
