// Package forecast is carbongate's domain: zones, hourly carbon-intensity
// series, forecasts with their provenance, the Forecaster interface, the
// window search that picks where and when to run, and forecast metrics.
//
// It imports only the standard library (and gonum); every other package of
// carbongate imports it.
package forecast
