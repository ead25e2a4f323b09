package httpapi

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/labstack/echo/v5"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/instances"
	"github.com/carbongate/carbongate/gateway"
)

// maxAlternatives bounds the runners-up an instance-type answer lists.
const maxAlternatives = 50

type instanceJSON struct {
	Name       string    `json:"name"`
	Family     string    `json:"family"`
	VCPUs      int       `json:"vcpus"`
	MemoryGiB  float64   `json:"memory_gib"`
	Processors []string  `json:"processors"`
	GPUs       int       `json:"gpus,omitempty"`
	Burstable  bool      `json:"burstable,omitempty"`
	Watts      float64   `json:"watts"`
	Breakdown  wattsJSON `json:"watts_breakdown"`
}

type wattsJSON struct {
	Compute  float64 `json:"compute"`
	GPU      float64 `json:"gpu"`
	Memory   float64 `json:"memory"`
	MemoryGB float64 `json:"memory_gb_counted"`
}

type instanceTypesBody struct {
	Provider     string         `json:"provider"`
	Choice       instanceJSON   `json:"choice"`
	Alternatives []instanceJSON `json:"alternatives"`
	Considered   int            `json:"considered"`
	Utilization  float64        `json:"utilization"`
	Source       sourceJSON     `json:"source"`
	RequestID    string         `json:"request_id"`
}

type sourceJSON struct {
	Package string `json:"package"`
	Version string `json:"version"`
	Licence string `json:"licence"`
}

func instanceOf(c instances.Candidate) instanceJSON {
	t, w := c.Type, c.Watts
	return instanceJSON{Name: t.Name, Family: t.Family, VCPUs: t.VCPUs, MemoryGiB: t.MemoryGiB, Processors: t.Processors,
		GPUs: t.GPUs, Burstable: t.Burstable, Watts: w.Total,
		Breakdown: wattsJSON{Compute: w.Compute, GPU: w.GPU, Memory: w.Memory, MemoryGB: w.MemoryGB}}
}

// instanceTypes answers GET /v1/instance-types: the instance type of a
// provider that fits min_cpu and min_ram with the least estimated power
// (forecast/instances), and the runners-up.
func (s *Server) instanceTypes(c *echo.Context) error {
	q, err := singleQuery(c)
	if err != nil {
		return err
	}
	provider := strings.ToLower(strings.TrimSpace(q.Get("provider")))
	if provider == "" {
		return forecast.FieldErrorf(forecast.EINVALID, "provider", "query parameter provider is required (%s)", strings.Join(instances.Providers, ", "))
	}
	cat, err := instances.Load(provider)
	if forecast.ErrorCode(err) == forecast.ENOTFOUND {
		return forecast.FieldErrorf(forecast.EINVALID, "provider", "%s", forecast.ErrorMessage(err))
	}
	if err != nil {
		return err
	}
	req, err := instanceRequest(q)
	if err != nil {
		return err
	}
	res, err := cat.Fit(req)
	if err != nil {
		return err
	}
	src := cat.Source()
	out := instanceTypesBody{Provider: provider, Choice: instanceOf(res.Choice), Alternatives: make([]instanceJSON, len(res.Alternatives)),
		Considered: res.Considered, Utilization: res.Utilization,
		Source:    sourceJSON{Package: src.Package, Version: src.Version, Licence: src.Licence},
		RequestID: c.Get(keyRequestID).(string)}
	for i, a := range res.Alternatives {
		out.Alternatives[i] = instanceOf(a)
	}
	return writeJSON(c, http.StatusOK, out)
}

// instanceRequest parses the query parameters of GET /v1/instance-types.
func instanceRequest(q url.Values) (instances.Request, error) {
	var req instances.Request
	n, err := strconv.Atoi(q.Get("min_cpu"))
	if err != nil || n <= 0 || n > 1<<16 {
		return req, forecast.FieldErrorf(forecast.EINVALID, "min_cpu", "min_cpu must be a positive whole number of vCPUs, got %q", forecast.Clip(q.Get("min_cpu"), 32))
	}
	req.MinCPU = n
	if req.MinRAMGiB, err = parseGiB(q.Get("min_ram")); err != nil {
		return req, err
	}
	req.Family, req.Processor = strings.TrimSpace(q.Get("family")), strings.TrimSpace(q.Get("processor"))
	if len(req.Family) > 64 || len(req.Processor) > 64 {
		return req, forecast.FieldErrorf(forecast.EINVALID, "family", "family and processor are at most 64 characters")
	}
	for _, b := range []struct {
		name string
		dst  *bool
	}{{"burstable", &req.Burstable}, {"gpu", &req.GPU}} {
		if v := q.Get(b.name); v != "" {
			if *b.dst, err = strconv.ParseBool(v); err != nil {
				return req, forecast.FieldErrorf(forecast.EINVALID, b.name, "%s must be true or false, got %q", b.name, forecast.Clip(v, 32))
			}
		}
	}
	if v := q.Get("utilization"); v != "" {
		u, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return req, forecast.FieldErrorf(forecast.EINVALID, "utilization", "utilization must be a number in (0, 1], got %q", forecast.Clip(v, 32))
		}
		if err := gateway.CheckUtilization(u, "utilization"); err != nil {
			return req, err
		}
		req.Utilization = u
	}
	req.Alternatives = 5
	if v := q.Get("alternatives"); v != "" {
		a, err := strconv.Atoi(v)
		if err != nil || a < 0 || a > maxAlternatives {
			return req, forecast.FieldErrorf(forecast.EINVALID, "alternatives", "alternatives must be 0 to %d, got %q", maxAlternatives, forecast.Clip(v, 32))
		}
		req.Alternatives = a
	}
	return req, nil
}

// ramUnits are the memory suffixes min_ram takes, as Kubernetes writes
// quantities, in GiB.
var ramUnits = []struct {
	suffix string
	gib    float64
}{{"Ti", 1024}, {"Gi", 1}, {"Mi", 1.0 / 1024}, {"T", 1e12 / (1 << 30)}, {"G", 1e9 / (1 << 30)}, {"M", 1e6 / (1 << 30)}}

// parseGiB parses min_ram: GiB as a number, or a quantity like 16Gi,
// 16384Mi or 17G.
func parseGiB(s string) (float64, error) {
	s = strings.TrimSpace(s)
	bad := forecast.FieldErrorf(forecast.EINVALID, "min_ram", "min_ram must be a positive amount of memory: GiB as a number, or a quantity like 16Gi or 16384Mi, got %q", forecast.Clip(s, 32))
	scale := 1.0
	for _, u := range ramUnits {
		if num, ok := strings.CutSuffix(s, u.suffix); ok {
			s, scale = num, u.gib
			break
		}
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || !(v > 0) || v*scale > 1<<20 {
		return 0, bad
	}
	return v * scale, nil
}
