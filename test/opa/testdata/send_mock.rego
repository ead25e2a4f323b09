# send stands in for http.send in BenchmarkPolicyEval: it answers a
# /v1/schedule request as carbongate does, choosing the last zone, with a
# forecast provenance per zone. Not part of the bundle.
package carbongate_bench

send(req) := {"status_code": 200, "body": {
	"decision": {"zone": zones[count(zones) - 1], "start": "2021-06-02T00:00:00Z", "end": "2021-06-02T03:00:00Z", "mean_intensity": 36.5},
	"savings_pct": 77.25,
	"provenance": {z: {"model": "m", "version": "", "source": "baseline", "issued_at": "2021-06-01T00:00:00Z"} | some z in zones},
	"request_id": "REQ1",
}} if zones := req.body.zones
