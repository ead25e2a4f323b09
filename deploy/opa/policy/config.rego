package carbongate.admission

# config is the bundle's data.carbongate.config (config/data.json) with
# OPA's environment on top, so that a deployment sets it at `opa run` time:
#
#	CARBONGATE_URL            carbongate's base URL (carbongate_url)
#	CARBONGATE_TIMEOUT        bound of the /v1/schedule call, a Go duration (timeout)
#	CARBONGATE_FAIL_OPEN      "true": admit unscheduled when carbongate is unavailable (fail_open)
#	CARBONGATE_CACHE_SECONDS  how long an identical /v1/schedule answer is reused; 0: never (cache_seconds)
#
# An empty or malformed variable leaves the bundle's value. The decision
# reads the settings one by one (setting_*), so that a review evaluates only
# those it uses; config gathers them.
config := {
	"carbongate_url": setting_url,
	"timeout": setting_timeout,
	"fail_open": setting_fail_open,
	"cache_seconds": setting_cache_seconds,
}

default env := {}

env := opa.runtime().env

setting_url := env.CARBONGATE_URL if {
	env.CARBONGATE_URL != ""
} else := data.carbongate.config.carbongate_url

setting_timeout := env.CARBONGATE_TIMEOUT if {
	regex.match(`^(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:ns|us|µs|μs|ms|s|m|h)(?:(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:ns|us|µs|μs|ms|s|m|h))*$`, env.CARBONGATE_TIMEOUT)
	time.parse_duration_ns(env.CARBONGATE_TIMEOUT) > 0
} else := data.carbongate.config.timeout

setting_fail_open if {
	lower(env.CARBONGATE_FAIL_OPEN) in {"true", "1", "yes"}
} else := false if {
	lower(env.CARBONGATE_FAIL_OPEN) in {"false", "0", "no"}
} else := data.carbongate.config.fail_open

setting_cache_seconds := to_number(env.CARBONGATE_CACHE_SECONDS) if {
	regex.match(`^(?:0|[1-9][0-9]{0,5})$`, env.CARBONGATE_CACHE_SECONDS)
} else := data.carbongate.config.cache_seconds
