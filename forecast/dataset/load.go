package dataset

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/carbongate/carbongate/forecast"
)

// DefaultMaxGap is the longest gap, in hours, that is filled by linear
// interpolation when Loader.MaxGap is 0.
const DefaultMaxGap = 6

// Loader loads CSV files with options. The zero Loader applies the package
// rules with DefaultMaxGap and takes the zone from the data or the name.
type Loader struct {
	// Zone, when set, is the zone of every file loaded: layout A files need
	// not be named after it, and a layout B file whose Zone id differs is
	// an error. LoadDir and LoadFS ignore it (the names give the zones).
	Zone forecast.Zone
	// MaxGap is the longest gap in hours that is filled by interpolation:
	// 0 means DefaultMaxGap, a negative value fills no gap at all.
	MaxGap int
	// Name, when set, gives the name by which issues from LoadFS refer to
	// the file or folder at an fs.FS path (default: the path itself).
	Name func(fsPath string) string
}

func (l Loader) maxGap() int {
	if l.MaxGap == 0 {
		return DefaultMaxGap
	}
	return max(l.MaxGap, -1)
}

// Load reads one CSV file with the zero Loader; see Loader.Load.
func Load(r io.Reader, name string) (*Table, []Issue, error) { return Loader{}.Load(r, name) }

// LoadFile reads the CSV file at path with the zero Loader.
func LoadFile(path string) (*Table, []Issue, error) { return Loader{}.LoadFile(path) }

// LoadDir reads a data directory with the zero Loader; see Loader.LoadFS.
func LoadDir(dir string) (map[forecast.Zone]*Table, []Issue, error) { return Loader{}.LoadDir(dir) }

// LoadFS reads a data directory of fsys with the zero Loader; see
// Loader.LoadFS.
func LoadFS(fsys fs.FS, dir string) (map[forecast.Zone]*Table, []Issue, error) {
	return Loader{}.LoadFS(fsys, dir)
}

// Load reads one CSV file, plain or gzip-compressed, in either layout. name
// is used in issues and, for layout A without l.Zone, to tell the zone: the
// base name without .csv or .csv.gz. It returns every issue found, warnings
// and errors, in file order. When any issue is an error the Table is nil
// and err is an EINVALID *forecast.Error listing the first errors.
func (l Loader) Load(r io.Reader, name string) (*Table, []Issue, error) {
	c := &collector{}
	s := &loadState{c: c, maxGap: l.maxGap(), files: []string{name}}
	p := parse(r, name, 0, c)
	var t *Table
	if p != nil {
		zone := l.Zone
		switch {
		case zone == "":
			zone = zoneOf(p, name, c)
		case p.layout == layoutB && p.zone != "" && p.zone != zone:
			c.errorf(name, p.zoneAt, "Zone id %s, but the file is loaded as zone %s", p.zone, zone)
		}
		t = s.build(zone, []*period{p})
	}
	if err := c.err(); err != nil {
		return nil, c.list, err
	}
	return t, c.list, nil
}

// LoadFile reads the CSV file at path; see Load. A file that cannot be
// opened yields ENOTFOUND (missing) or the open error.
func (l Loader) LoadFile(path string) (*Table, []Issue, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, openError(err)
	}
	defer f.Close()
	return l.Load(f, path)
}

// LoadDir reads the data directory dir of the local file system; issues
// name files by their path under dir. See LoadFS.
func (l Loader) LoadDir(dir string) (map[forecast.Zone]*Table, []Issue, error) {
	return l.loadFS(os.DirFS(dir), ".", func(p string) string { return filepath.Join(dir, filepath.FromSlash(p)) })
}

// LoadFS reads the data directory dir of fsys: <zone>.csv or <zone>.csv.gz
// files and <zone>/ folders whose .csv and .csv.gz files are consecutive
// periods of one series, read in name order (see the package doc). It
// returns every issue found; when any is an error the map is nil and err is
// an EINVALID *forecast.Error listing the first errors. A missing dir is
// ENOTFOUND.
func (l Loader) LoadFS(fsys fs.FS, dir string) (map[forecast.Zone]*Table, []Issue, error) {
	if l.Name != nil {
		return l.loadFS(fsys, dir, l.Name)
	}
	return l.loadFS(fsys, dir, func(p string) string { return p })
}

func openError(err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return &forecast.Error{Code: forecast.ENOTFOUND, Message: "data not found", Err: err}
	}
	return err
}

// zoneSource is one zone of a data directory: its files in period order.
type zoneSource struct {
	zone  forecast.Zone
	where string   // the file or folder that names the zone
	files []string // fsys paths
}

func (l Loader) loadFS(fsys fs.FS, dir string, display func(string) string) (map[forecast.Zone]*Table, []Issue, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, nil, openError(err)
	}
	c := &collector{}
	var zones []*zoneSource
	byZone := map[forecast.Zone]*zoneSource{}
	add := func(z forecast.Zone, where string, files []string) {
		if prev, dup := byZone[z]; dup {
			c.errorf(display(where), 0, "zone %s is also given by %s; give each zone once", z, display(prev.where))
			return
		}
		zs := &zoneSource{zone: z, where: where, files: files}
		byZone[z] = zs
		zones = append(zones, zs)
	}
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
			continue
		}
		p := path.Join(dir, name)
		if e.IsDir() {
			z, err := zoneFromName(name)
			if err != nil {
				c.warnf(display(p), 0, "folder is not named after a zone (%s); skipped", forecast.ErrorMessage(err))
				continue
			}
			files := zoneFolder(fsys, p, display, c)
			if files == nil {
				continue
			}
			add(z, p, files)
			continue
		}
		base, ok := trimCSV(name)
		if !ok {
			continue
		}
		z, err := zoneFromName(base)
		if err != nil {
			c.errorf(display(p), 0, "file is not named <zone>.csv: %s", forecast.ErrorMessage(err))
			continue
		}
		add(z, p, []string{p})
	}
	if len(zones) == 0 && c.errs == 0 {
		c.errorf(display(dir), 0, "no <zone>.csv, <zone>.csv.gz files or <zone>/ folders")
	}

	tables := make(map[forecast.Zone]*Table, len(zones))
	s := &loadState{c: c, maxGap: l.maxGap()}
	for _, zs := range zones {
		var periods []*period
		for _, f := range zs.files {
			name := display(f)
			file := int32(len(s.files))
			s.files = append(s.files, name)
			r, err := fsys.Open(f)
			if err != nil {
				c.errorf(name, 0, "cannot open: %v", err)
				continue
			}
			p := parse(r, name, file, c)
			r.Close()
			if p == nil {
				continue
			}
			if p.layout == layoutB && p.zone != "" && p.zone != zs.zone {
				c.errorf(name, p.zoneAt, "Zone id %s, but %s holds zone %s", p.zone, display(zs.where), zs.zone)
			}
			periods = append(periods, p)
		}
		if t := s.build(zs.zone, periods); t != nil {
			tables[zs.zone] = t
		}
	}
	if err := c.err(); err != nil {
		return nil, c.list, err
	}
	return tables, c.list, nil
}

// zoneFolder lists the CSV files of a zone folder in name order.
func zoneFolder(fsys fs.FS, dir string, display func(string) string, c *collector) []string {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		c.errorf(display(dir), 0, "cannot read folder: %v", err)
		return nil
	}
	var files []string
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
			continue
		}
		if _, ok := trimCSV(name); !ok {
			continue
		}
		if e.IsDir() {
			c.warnf(display(path.Join(dir, name)), 0, "folder inside a zone folder; skipped")
			continue
		}
		files = append(files, path.Join(dir, name))
	}
	if len(files) == 0 {
		c.errorf(display(dir), 0, "zone folder holds no .csv or .csv.gz file")
		return nil
	}
	return files // fs.ReadDir sorts by name
}

// trimCSV strips .csv or .csv.gz (any case) from a file name.
func trimCSV(name string) (string, bool) {
	lower := strings.ToLower(name)
	for _, ext := range [...]string{".csv.gz", ".csv"} {
		if strings.HasSuffix(lower, ext) && len(name) > len(ext) {
			return name[:len(name)-len(ext)], true
		}
	}
	return "", false
}

// zoneFromName reads a zone id from a file or folder name. Beyond
// forecast.ParseZone it requires a leading letter (zone ids start with a
// country code), so that period files such as 2021.csv are not taken for
// zones.
func zoneFromName(s string) (forecast.Zone, error) {
	z, err := forecast.ParseZone(s)
	if err != nil {
		return "", err
	}
	if c := z[0]; c < 'A' || c > 'Z' {
		return "", forecast.Errorf(forecast.EINVALID, "zone id %q must start with a letter", s)
	}
	return z, nil
}

// zoneOf tells the zone of a single file loaded without Loader.Zone: the
// Zone id of layout B, else the file's base name.
func zoneOf(p *period, name string, c *collector) forecast.Zone {
	if p.layout == layoutB {
		return p.zone // "" after a Zone id error, already reported
	}
	base := path.Base(strings.ReplaceAll(name, `\`, "/"))
	if b, ok := trimCSV(base); ok {
		base = b
	}
	z, err := zoneFromName(base)
	if err != nil {
		c.errorf(name, 0, "cannot tell the zone from the file name (%s); name the file <zone>.csv or give the zone", forecast.ErrorMessage(err))
		return ""
	}
	return z
}

// loadState is what build needs besides the periods.
type loadState struct {
	c      *collector
	maxGap int
	files  []string // display names by row.file
}

func (s *loadState) at(r row) (string, int) { return s.files[r.file], int(r.line) }

func hourString(h int64) string { return time.Unix(h*3600, 0).UTC().Format(timeLayoutOut) }

// build merges the periods of one zone and applies the duplicate and gap
// rules. It returns nil when an error was found (by it or before).
func (s *loadState) build(zone forecast.Zone, periods []*period) *Table {
	c := s.c
	periods = slices.DeleteFunc(periods, func(p *period) bool { return p == nil || len(p.rows) == 0 })
	if len(periods) == 0 {
		return nil
	}

	// Sources: those in every period.
	common := slices.Clone(periods[0].sources)
	for _, p := range periods[1:] {
		common = slices.DeleteFunc(common, func(n string) bool { return !slices.Contains(p.sources, n) })
	}
	slices.Sort(common)
	for _, p := range periods {
		for _, n := range p.sources {
			if !slices.Contains(common, n) {
				c.warnf(p.name, 1, "source %s%s is not in every period of zone %s; dropped", n, sourceSuffix, zone)
			}
		}
	}

	// Merge the periods, values in the order direct, lifecycle, common...
	width := 2 + len(common)
	total := 0
	for _, p := range periods {
		total += len(p.rows)
	}
	rows := make([]row, 0, total)
	for i, p := range periods {
		if i > 0 && p.rows[0].hour < periods[i-1].rows[0].hour {
			prev := periods[i-1]
			c.errorf(p.name, int(p.rows[0].line), "period starts at %s, before the previous period %s (starts at %s); name periods in time order",
				hourString(p.rows[0].hour), prev.name, hourString(prev.rows[0].hour))
		}
		idx := make([]int, width)
		idx[0], idx[1] = 0, 1
		for k, n := range common {
			idx[2+k] = 2 + slices.Index(p.sources, n)
		}
		back := make([]float64, len(p.rows)*width)
		for _, r := range p.rows {
			v := back[:width:width]
			back = back[width:]
			for k, j := range idx {
				v[k] = r.vals[j]
			}
			r.vals = v
			rows = append(rows, r)
		}
	}
	if len(periods) > 1 {
		slices.SortStableFunc(rows, func(a, b row) int { return cmpInt64(a.hour, b.hour) })
	}

	// Duplicates: identical ones dropped, conflicting ones are errors.
	kept := rows[:1]
	for _, r := range rows[1:] {
		prev := kept[len(kept)-1]
		if r.hour != prev.hour {
			kept = append(kept, r)
			continue
		}
		f, l := s.at(prev)
		file, line := s.at(r)
		if k := firstDiff(prev.vals, r.vals); k < 0 {
			c.warnf(file, line, "duplicate of %s:%d for %s; dropped", f, l, hourString(r.hour))
		} else {
			c.errorf(file, line, "conflicts with %s:%d for %s: %s is %s there and %s here",
				f, l, hourString(r.hour), columnName(k, common), fmtValue(prev.vals[k]), fmtValue(r.vals[k]))
		}
	}
	rows = kept

	// Missing hours.
	holeErr := false
	for i := 1; i < len(rows); i++ {
		missing := rows[i].hour - rows[i-1].hour - 1
		if missing == 0 {
			continue
		}
		f, l := s.at(rows[i-1])
		file, line := s.at(rows[i])
		what := fmt.Sprintf("no rows for %d hour(s) from %s to %s (between %s:%d and here)",
			missing, hourString(rows[i-1].hour+1), hourString(rows[i].hour-1), f, l)
		if missing > int64(s.maxGap) {
			c.errorf(file, line, "%s; gaps longer than %d hours are not filled", what, max(s.maxGap, 0))
			holeErr = true
		} else {
			c.warnf(file, line, "%s; filled by linear interpolation", what)
		}
	}
	if holeErr {
		return nil // a dense array could be arbitrarily long
	}

	// Dense columns with NaN for missing values and hours.
	first := rows[0].hour
	n := int(rows[len(rows)-1].hour-first) + 1
	at := make([]int32, n) // index into rows, -1 for a missing hour
	for i := range at {
		at[i] = -1
	}
	for i, r := range rows {
		at[r.hour-first] = int32(i)
	}
	dense := make([][]float64, width)
	back := make([]float64, n*width)
	for k := range dense {
		col := back[k*n : (k+1)*n : (k+1)*n]
		for i := range col {
			col[i] = math.NaN()
		}
		for _, r := range rows {
			col[r.hour-first] = r.vals[k]
		}
		dense[k] = col
		s.fillGaps(col, at, rows, columnName(k, common), first)
	}
	if c.errs > 0 {
		return nil
	}
	t := &Table{
		Zone:      zone,
		Start:     time.Unix(first*3600, 0).UTC(),
		Direct:    dense[0],
		Lifecycle: dense[1],
		Sources:   make(map[string][]float64, len(common)),
	}
	for k, name := range common {
		t.Sources[name] = dense[2+k]
	}
	return t
}

// fillGaps applies the gap rule to one column: runs of NaN of at most
// maxGap hours with values on both sides are interpolated linearly; others
// are errors. Runs made only of missing hours were reported as such.
func (s *loadState) fillGaps(col []float64, at []int32, rows []row, label string, first int64) {
	n := len(col)
	for i := 0; i < n; i++ {
		if !math.IsNaN(col[i]) {
			continue
		}
		j := i
		for j < n && math.IsNaN(col[j]) {
			j++
		}
		// The run is col[i:j]; report it at its first existing row.
		onlyHoles := true
		var file string
		var line int
		for k := i; k < j; k++ {
			if at[k] >= 0 {
				onlyHoles = false
				file, line = s.at(rows[at[k]])
				break
			}
		}
		length := j - i
		what := fmt.Sprintf("%s missing for %d hour(s) from %s to %s", label, length, hourString(first+int64(i)), hourString(first+int64(j-1)))
		switch {
		case i == 0:
			s.c.errorf(file, line, "%s, at the start of the series; not filled", what)
		case j == n:
			s.c.errorf(file, line, "%s, at the end of the series; not filled", what)
		case length > s.maxGap:
			s.c.errorf(file, line, "%s; gaps longer than %d hours are not filled", what, max(s.maxGap, 0))
		default:
			a, b := col[i-1], col[j]
			for k := i; k < j; k++ {
				col[k] = a + (b-a)*float64(k-i+1)/float64(length+1)
			}
			if !onlyHoles {
				s.c.warnf(file, line, "%s; filled by linear interpolation between %s and %s", what, fmtValue(a), fmtValue(b))
			}
		}
		i = j
	}
}

// firstDiff returns the first index where a and b differ (NaN equals NaN),
// or -1.
func firstDiff(a, b []float64) int {
	for i := range a {
		if a[i] != b[i] && !(math.IsNaN(a[i]) && math.IsNaN(b[i])) {
			return i
		}
	}
	return -1
}

func columnName(k int, sources []string) string {
	switch k {
	case 0:
		return colDirect
	case 1:
		return colLifecycle
	}
	return sources[k-2] + sourceSuffix
}

func fmtValue(v float64) string {
	if math.IsNaN(v) {
		return "missing"
	}
	return fmt.Sprint(v)
}
