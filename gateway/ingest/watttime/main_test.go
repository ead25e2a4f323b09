package watttime

import (
	"os"
	"testing"

	"github.com/carbongate/carbongate/gateway/leakcheck"
)

func TestMain(m *testing.M) { os.Exit(leakcheck.Run(m)) }
