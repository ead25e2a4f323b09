package main

// countryCode is ISO 3166-1 alpha-2 by the country names cloud-regions-info
// uses.
var countryCode = map[string]string{
	"Australia": "AU", "Austria": "AT", "Bahrain": "BH", "Belgium": "BE", "Brazil": "BR", "Canada": "CA",
	"Chile": "CL", "China": "CN", "Finland": "FI", "France": "FR", "Germany": "DE", "Hong Kong": "HK",
	"India": "IN", "Indonesia": "ID", "Ireland": "IE", "Israel": "IL", "Italy": "IT", "Japan": "JP",
	"Malaysia": "MY", "Mexico": "MX", "Netherlands": "NL", "Norway": "NO", "Poland": "PL", "Qatar": "QA",
	"Saudi Arabia": "SA", "Singapore": "SG", "South Africa": "ZA", "South Korea": "KR", "Spain": "ES",
	"Sweden": "SE", "Switzerland": "CH", "Taiwan": "TW", "United Arab Emirates": "AE",
	"United Kingdom": "GB", "United States": "US",
}

// iso3to2 is ISO 3166-1 alpha-2 by the alpha-3 codes codecarbon uses.
var iso3to2 = map[string]string{
	"AUS": "AU", "BEL": "BE", "BRA": "BR", "CAN": "CA", "CHE": "CH", "CHL": "CL", "CHN": "HK", "DEU": "DE",
	"ESP": "ES", "FIN": "FI", "FRA": "FR", "GBR": "GB", "IDN": "ID", "IND": "IN", "ISR": "IL", "ITA": "IT",
	"JPN": "JP", "KOR": "KR", "NLD": "NL", "POL": "PL", "QAT": "QA", "SAU": "SA", "SGP": "SG", "TWN": "TW",
	"USA": "US", "ZAF": "ZA",
}

// singleZone are the countries whose grid Electricity Maps publishes as
// one zone keyed by the country code (islands and overseas parts aside:
// ES is mainland Spain, FR mainland France, GB Great Britain). Countries
// with several zones (US, CA, AU, BR, IN, JP, NO, DK, IT, CL, MY, RU, CN,
// and SE, which Electricity Maps splits into SE1–SE4 though the GSF
// metadata and the bundled data use SE) are placed region by region in
// hand.csv.
var singleZone = map[string]bool{
	"AE": true, "AT": true, "BE": true, "BH": true, "CH": true, "DE": true, "ES": true, "FI": true,
	"FR": true, "GB": true, "GR": true, "HK": true, "ID": true, "IE": true, "IL": true, "KR": true,
	"MX": true, "NL": true, "NZ": true, "PL": true, "QA": true, "SA": true, "SG": true, "TH": true,
	"TW": true, "ZA": true,
}
