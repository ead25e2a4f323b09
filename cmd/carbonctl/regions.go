package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/dataset/bundled"
	"github.com/carbongate/carbongate/forecast/regions"
)

// regionRow is one region as carbonctl regions prints it.
type regionRow struct {
	Provider string        `json:"provider"`
	Region   string        `json:"region"`
	Zone     forecast.Zone `json:"zone,omitempty"`
	Location string        `json:"location,omitempty"`
	Country  string        `json:"country,omitempty"`
	// Data is what the bundled build knows of the zone: "hourly" (a
	// bundled series), "climatology" (an annual lifecycle figure), or
	// "none".
	Data       string `json:"data"`
	ZoneSource string `json:"zone_source,omitempty"`
	Exception  string `json:"exception,omitempty"`
}

// runRegions lists the region table carbonctl is built with: every region
// of a provider (or all), its zone and what data the bundled build has for
// that zone. It reads no server: a gateway with a store may know more zones.
func runRegions(_ context.Context, args []string, stdout, _ io.Writer) error {
	fs := newFlags("regions", stdout)
	provider := fs.String("provider", "", "aws, azure, gcp or oracle (or an alias: amazon, microsoft, google, oci); default: all")
	output := fs.String("output", "table", "table (for people) or json")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected arguments %q", fs.Args())
	}
	if *output != "table" && *output != "json" {
		return usagef("--output must be table or json, got %q", *output)
	}
	p := ""
	if *provider != "" {
		var ok bool
		if p, ok = regions.CanonicalProvider(*provider); !ok {
			return usagef("--provider %q: want aws, azure, gcp or oracle", *provider)
		}
	}
	rows, err := regionRows(p)
	if err != nil {
		return err
	}
	if *output == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	}
	return printRegions(stdout, rows)
}

// regionRows returns the table's regions of provider ("" for all).
func regionRows(provider string) ([]regionRow, error) {
	t, err := regions.Default()
	if err != nil {
		return nil, err
	}
	hourly, err := bundledZones()
	if err != nil {
		return nil, err
	}
	var rows []regionRow
	for _, r := range t.All() {
		if provider != "" && r.Provider != provider {
			continue
		}
		row := regionRow{Provider: r.Provider, Region: r.Region, Zone: r.Zone, Location: r.Location, Country: r.Country,
			Data: "none", ZoneSource: r.ZoneSource, Exception: r.Exception}
		if _, ok := t.Climatology(r.Zone); ok {
			row.Data = "climatology"
		}
		if hourly[r.Zone] {
			row.Data = "hourly"
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// bundledZones are the zones with a bundled hourly series.
func bundledZones() (map[forecast.Zone]bool, error) {
	entries, err := fs.ReadDir(bundled.FS(), ".")
	if err != nil {
		return nil, err
	}
	zones := map[forecast.Zone]bool{}
	for _, e := range entries {
		zones[forecast.Zone(strings.TrimSuffix(e.Name(), ".csv.gz"))] = true
	}
	return zones, nil
}

func printRegions(w io.Writer, rows []regionRow) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PROVIDER\tREGION\tZONE\tDATA\tLOCATION")
	type count struct{ all, zoned, data int }
	counts := map[string]*count{}
	var order []string
	for _, r := range rows {
		c := counts[r.Provider]
		if c == nil {
			c = &count{}
			counts[r.Provider] = c
			order = append(order, r.Provider)
		}
		c.all++
		zone := string(r.Zone)
		if zone == "" {
			zone = "-"
		} else {
			c.zoned++
		}
		if r.Data != "none" {
			c.data++
		}
		loc := strings.TrimPrefix(r.Location+", "+r.Country, ", ")
		loc = strings.TrimSuffix(loc, ", ")
		if r.Exception != "" {
			loc = strings.TrimSpace(loc + " (no zone: " + r.Exception + ")")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Provider, r.Region, zone, r.Data, loc)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, p := range order {
		c := counts[p]
		fmt.Fprintf(w, "%s: %d regions, %d with a zone (%s %%), %d with bundled zone data\n",
			p, c.all, c.zoned, strconv.FormatFloat(100*float64(c.zoned)/float64(c.all), 'f', 1, 64), c.data)
	}
	return nil
}
