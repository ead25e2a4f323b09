// Package artifact stores models as MLflow model directories: an MLmodel
// YAML file with a "carbongate" flavor and the MLflow tensor signature of the
// forecaster contract, plus the weights as little-endian float64 values.
// Loading a saved model gives back bit-identical predictions.
//
// Layout of a model directory:
//
//	MLmodel       flavors.carbongate: format_version, family, name, zone,
//	              signal, lookback, horizon, data, weights, data_sha256,
//	              training_window, interval_level (interval models),
//	              params; signature: inputs history FP32 [-1, L] and
//	              start_unix INT64 [-1, 1], output forecast FP32 [-1, H]
//	              and, for a models.IntervalModel, lower and upper FP32
//	              [-1, H]
//	weights.bin   the weights (absent for families without weights)
//
// Format version 2 (written now) may carry family parameters version 1
// did not know; version-1 directories still load.
package artifact

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/models"
)

// Names used in a model directory.
const (
	MLmodelFile = "MLmodel"
	WeightsFile = "weights.bin"
	FlavorName  = "carbongate"
	// FormatVersion is the version Save writes. Version 2 added optional
	// family parameters (ridge profile, daily means, cross-validated
	// lambdas, interval bounds) that a version-1 reader would silently
	// ignore; Load reads versions 1 and 2.
	FormatVersion = 2
	// MinFormatVersion is the oldest version Load reads.
	MinFormatVersion = 1
)

// Family encodes and decodes the models of one family.
type Family struct {
	Name string
	// Encode returns the family parameters, written under params, and the
	// weights (nil when the family has none).
	Encode func(m models.Model) (params any, weights []float64, err error)
	// Decode rebuilds a model from what Encode wrote. params decodes into
	// the family's parameter type.
	Decode func(meta models.Meta, info models.TrainingInfo, params func(v any) error, weights []float64) (models.Model, error)
}

// Registry maps family names to their codecs. It is immutable after New and
// safe for concurrent use.
type Registry struct {
	families map[string]Family
	now      func() time.Time
}

// NewRegistry returns a registry of the given families; a later family of
// the same name replaces an earlier one. now stamps utc_time_created; nil
// means time.Now.
func NewRegistry(now func() time.Time, families ...Family) *Registry {
	r := &Registry{families: map[string]Family{}, now: now}
	if r.now == nil {
		r.now = time.Now
	}
	for _, f := range families {
		r.families[f.Name] = f
	}
	return r
}

// Families returns the registered family names, sorted.
func (r *Registry) Families() []string {
	names := make([]string, 0, len(r.families))
	for n := range r.families {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Save writes m to dir with the default registry; see Registry.Save.
func Save(dir string, m models.Model) error { return Default().Save(dir, m) }

// Load reads the model in dir with the default registry; see Registry.Load.
func Load(dir string) (models.Model, error) { return Default().Load(dir) }

// mlmodel is the MLmodel file.
type mlmodel struct {
	Flavors        map[string]yaml.Node `yaml:"flavors"`
	Signature      *signature           `yaml:"signature,omitempty"`
	ModelUUID      string               `yaml:"model_uuid,omitempty"`
	UTCTimeCreated string               `yaml:"utc_time_created,omitempty"`
}

// flavor is the carbongate flavor.
type flavor struct {
	FormatVersion  int             `yaml:"format_version"`
	Family         string          `yaml:"family"`
	Name           string          `yaml:"name"`
	Zone           forecast.Zone   `yaml:"zone"`
	Signal         forecast.Signal `yaml:"signal"`
	Lookback       int             `yaml:"lookback"`
	Horizon        int             `yaml:"horizon"`
	Data           string          `yaml:"data,omitempty"`
	Weights        int             `yaml:"weights"`
	DataSHA256     string          `yaml:"data_sha256,omitempty"`
	TrainingWindow *window         `yaml:"training_window,omitempty"`
	// IntervalLevel is the nominal coverage of the model's prediction
	// interval (lower/upper outputs); absent for point models.
	IntervalLevel float64   `yaml:"interval_level,omitempty"`
	Params        yaml.Node `yaml:"params"`
}

type window struct {
	From    string          `yaml:"from"`
	Until   string          `yaml:"until"`
	Samples int             `yaml:"samples"`
	Zones   []forecast.Zone `yaml:"zones,flow"`
}

// signature is MLflow's model signature: JSON strings of tensor specs.
type signature struct {
	Inputs  string `yaml:"inputs"`
	Outputs string `yaml:"outputs"`
}

type tensorSpec struct {
	Type string `json:"type"`
	Spec struct {
		DType string `json:"dtype"`
		Shape []int  `json:"shape"`
	} `json:"tensor-spec"`
	Name string `json:"name"`
}

func tensor(name, dtype string, shape ...int) tensorSpec {
	t := tensorSpec{Type: "tensor", Name: name}
	t.Spec.DType, t.Spec.Shape = dtype, shape
	return t
}

// contract returns the signature of the forecaster tensor contract, with
// the lower and upper outputs when interval is set.
func contract(lookback, horizon int, interval bool) (signature, error) {
	in, err := json.Marshal([]tensorSpec{tensor("history", "float32", -1, lookback), tensor("start_unix", "int64", -1, 1)})
	if err != nil {
		return signature{}, err
	}
	outs := []tensorSpec{tensor("forecast", "float32", -1, horizon)}
	if interval {
		outs = append(outs, tensor("lower", "float32", -1, horizon), tensor("upper", "float32", -1, horizon))
	}
	out, err := json.Marshal(outs)
	if err != nil {
		return signature{}, err
	}
	return signature{Inputs: string(in), Outputs: string(out)}, nil
}

func invalid(dir, format string, args ...any) error {
	return forecast.Errorf(forecast.EINVALID, "model directory %s: %s", filepath.Base(dir), fmt.Sprintf(format, args...))
}

// Save writes m as an MLflow model directory at dir, atomically (a model
// with a Serving() models.Model method is saved as what that returns, so a
// fitted ridge.Model with an interval is saved as the IntervalModel it
// loads as): the files
// are written to a temporary sibling directory that then replaces dir, so a
// reader (or a crash) never sees a half-written model. EINVALID when m's
// family is not registered or its parameters are inconsistent.
func (r *Registry) Save(dir string, m models.Model) error {
	if s, ok := m.(interface{ Serving() models.Model }); ok {
		m = s.Serving() // save the model as it is served (e.g. with its interval)
	}
	meta := m.Meta()
	fam, ok := r.families[meta.Family]
	if !ok {
		return forecast.Errorf(forecast.EINVALID, "model family %q is not registered (known: %s)", meta.Family, strings.Join(r.Families(), ", "))
	}
	params, weights, err := fam.Encode(m)
	if err != nil {
		return err
	}
	f := flavor{
		FormatVersion: FormatVersion, Family: meta.Family, Name: meta.Name, Zone: meta.Zone, Signal: meta.Signal,
		Lookback: meta.Lookback, Horizon: meta.Horizon, Weights: len(weights),
	}
	if err := f.Params.Encode(params); err != nil {
		return &forecast.Error{Code: forecast.EINTERNAL, Message: "encode model parameters", Err: err}
	}
	var data []byte
	if len(weights) > 0 {
		data = make([]byte, 8*len(weights))
		for i, w := range weights {
			binary.LittleEndian.PutUint64(data[8*i:], math.Float64bits(w))
		}
		sum := sha256.Sum256(data)
		f.Data, f.DataSHA256 = WeightsFile, hex.EncodeToString(sum[:])
	}
	if t, ok := m.(models.Trained); ok {
		info := t.Training()
		f.TrainingWindow = &window{From: stamp(info.From), Until: stamp(info.Until), Samples: info.Samples, Zones: info.Zones}
	}
	_, interval := m.(models.IntervalModel)
	if l, ok := m.(interface{ Level() float64 }); ok && interval {
		f.IntervalLevel = l.Level()
	}
	var node yaml.Node
	if err := node.Encode(f); err != nil {
		return &forecast.Error{Code: forecast.EINTERNAL, Message: "encode flavor", Err: err}
	}
	sig, err := contract(meta.Lookback, meta.Horizon, interval)
	if err != nil {
		return &forecast.Error{Code: forecast.EINTERNAL, Message: "encode signature", Err: err}
	}
	id := sha256.New()
	fmt.Fprintf(id, "%s\x00%s\x00%s\x00%d\x00%d\x00", meta.Name, meta.Family, meta.Zone, meta.Lookback, meta.Horizon)
	id.Write(data)
	doc := mlmodel{
		Flavors:        map[string]yaml.Node{FlavorName: node},
		Signature:      &sig,
		ModelUUID:      hex.EncodeToString(id.Sum(nil)[:16]),
		UTCTimeCreated: r.now().UTC().Format("2006-01-02 15:04:05.000000"),
	}
	text, err := yaml.Marshal(&doc)
	if err != nil {
		return &forecast.Error{Code: forecast.EINTERNAL, Message: "encode MLmodel", Err: err}
	}
	files := map[string][]byte{MLmodelFile: text}
	if data != nil {
		files[WeightsFile] = data
	}
	return writeDirAtomic(dir, files)
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// writeDirAtomic writes files into a fresh temporary sibling of dir and
// renames it to dir, replacing a previous dir.
func writeDirAtomic(dir string, files map[string][]byte) (err error) {
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dir)+".tmp-")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			os.RemoveAll(tmp)
		}
	}()
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	for name, b := range files {
		// No fsync: the rename makes the write atomic for readers and
		// against a killed process, which is what train needs; syncing
		// for power loss cost seconds per model on slow disks.
		if err := os.WriteFile(filepath.Join(tmp, name), b, 0o644); err != nil {
			return err
		}
	}
	if err := os.Rename(tmp, dir); err == nil {
		return nil
	}
	// dir exists: move it aside, move the new one in, drop the old one.
	old := tmp + ".old"
	if err := os.Rename(dir, old); err != nil {
		return err
	}
	if err := os.Rename(tmp, dir); err != nil {
		os.Rename(old, dir)
		return err
	}
	return os.RemoveAll(old)
}

// Load reads the model directory dir. It returns ENOTFOUND when dir does not
// exist and EINVALID naming the problem when it is not a carbongate model:
// no MLmodel file, no carbongate flavor, an unsupported format version, an
// unknown family, a signature that disagrees with lookback and horizon, a
// missing or corrupt weights file, or a wrong number of weights.
func (r *Registry) Load(dir string) (models.Model, error) {
	if st, err := os.Stat(dir); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, forecast.Errorf(forecast.ENOTFOUND, "model directory %s does not exist", filepath.Base(dir))
		}
		return nil, err
	} else if !st.IsDir() {
		return nil, invalid(dir, "not a directory")
	}
	text, err := os.ReadFile(filepath.Join(dir, MLmodelFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, invalid(dir, "no %s file", MLmodelFile)
	} else if err != nil {
		return nil, err
	}
	var doc mlmodel
	if err := yaml.Unmarshal(text, &doc); err != nil {
		return nil, &forecast.Error{Code: forecast.EINVALID, Message: fmt.Sprintf("model directory %s: %s is not valid YAML", filepath.Base(dir), MLmodelFile), Err: err}
	}
	node, ok := doc.Flavors[FlavorName]
	if !ok {
		have := make([]string, 0, len(doc.Flavors))
		for k := range doc.Flavors {
			have = append(have, k)
		}
		sort.Strings(have)
		return nil, invalid(dir, "no %s flavor in %s (flavors: %s)", FlavorName, MLmodelFile, strings.Join(have, ", "))
	}
	var f flavor
	if err := node.Decode(&f); err != nil {
		return nil, &forecast.Error{Code: forecast.EINVALID, Message: fmt.Sprintf("model directory %s: malformed %s flavor", filepath.Base(dir), FlavorName), Err: err}
	}
	if f.FormatVersion < MinFormatVersion || f.FormatVersion > FormatVersion {
		return nil, invalid(dir, "format version %d is not supported (want %d..%d)", f.FormatVersion, MinFormatVersion, FormatVersion)
	}
	fam, ok := r.families[f.Family]
	if !ok {
		return nil, invalid(dir, "unknown model family %q (known: %s)", f.Family, strings.Join(r.Families(), ", "))
	}
	if f.Lookback < 1 || f.Horizon < 1 {
		return nil, invalid(dir, "lookback %d and horizon %d must be positive", f.Lookback, f.Horizon)
	}
	if f.Zone != "" {
		if _, err := forecast.ParseZone(string(f.Zone)); err != nil {
			return nil, invalid(dir, "zone %q is not a zone id", f.Zone)
		}
	}
	if f.Signal != forecast.SignalDirect && f.Signal != forecast.SignalLifecycle {
		return nil, invalid(dir, "signal %q is not one of lifecycle, direct", f.Signal)
	}
	if doc.Signature != nil {
		point, err := contract(f.Lookback, f.Horizon, false)
		if err != nil {
			return nil, err
		}
		bounded, err := contract(f.Lookback, f.Horizon, true)
		if err != nil {
			return nil, err
		}
		if !sameJSON(doc.Signature.Inputs, point.Inputs) || (!sameJSON(doc.Signature.Outputs, point.Outputs) && !sameJSON(doc.Signature.Outputs, bounded.Outputs)) {
			return nil, invalid(dir, "signature does not match the forecaster contract for lookback %d and horizon %d", f.Lookback, f.Horizon)
		}
	}
	weights, err := readWeights(dir, &f)
	if err != nil {
		return nil, err
	}
	var info models.TrainingInfo
	if w := f.TrainingWindow; w != nil {
		if info.From, err = parseStamp(w.From); err != nil {
			return nil, invalid(dir, "training_window.from %q is not an RFC 3339 time", w.From)
		}
		if info.Until, err = parseStamp(w.Until); err != nil {
			return nil, invalid(dir, "training_window.until %q is not an RFC 3339 time", w.Until)
		}
		info.Samples, info.Zones = w.Samples, w.Zones
	}
	meta := models.Meta{Name: f.Name, Family: f.Family, Zone: f.Zone, Signal: f.Signal, Lookback: f.Lookback, Horizon: f.Horizon}
	m, err := fam.Decode(meta, info, f.Params.Decode, weights)
	if err != nil {
		return nil, &forecast.Error{Code: forecast.EINVALID, Message: fmt.Sprintf("model directory %s: %s", filepath.Base(dir), forecast.ErrorMessage(err)), Err: err}
	}
	return m, nil
}

func readWeights(dir string, f *flavor) ([]float64, error) {
	if f.Data == "" {
		if f.Weights != 0 {
			return nil, invalid(dir, "flavor declares %d weights but no data file", f.Weights)
		}
		return nil, nil
	}
	if f.Data != filepath.Base(f.Data) || f.Data == "." || f.Data == ".." {
		return nil, invalid(dir, "data file %q must be a plain file name", f.Data)
	}
	b, err := os.ReadFile(filepath.Join(dir, f.Data))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, invalid(dir, "data file %s is missing", f.Data)
	} else if err != nil {
		return nil, err
	}
	if len(b)%8 != 0 {
		return nil, invalid(dir, "data file %s has %d bytes, not a whole number of float64 values", f.Data, len(b))
	}
	if n := len(b) / 8; n != f.Weights {
		return nil, invalid(dir, "data file %s holds %d weights, flavor declares %d", f.Data, n, f.Weights)
	}
	if f.DataSHA256 != "" {
		sum := sha256.Sum256(b)
		if hex.EncodeToString(sum[:]) != f.DataSHA256 {
			return nil, invalid(dir, "data file %s does not match its data_sha256", f.Data)
		}
	}
	w := make([]float64, len(b)/8)
	for i := range w {
		w[i] = math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
	}
	return w, nil
}

func parseStamp(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	return time.Parse(time.RFC3339, s)
}

// sameJSON reports whether a and b are JSON documents of equal value.
func sameJSON(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return string(xa) == string(ya)
}

// VersionLen is the length of a model directory's version.
const VersionLen = 12

// Version returns the version of the model directory dir, the one string
// every part of carbongate names its content by: the first VersionLen hex
// digits of the SHA-256 of its MLmodel file (which holds the digest of the
// weights). ENOTFOUND when there is no MLmodel.
func Version(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, MLmodelFile))
	if errors.Is(err, fs.ErrNotExist) {
		return "", forecast.Errorf(forecast.ENOTFOUND, "model directory %s has no %s", filepath.Base(dir), MLmodelFile)
	} else if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:VersionLen], nil
}
