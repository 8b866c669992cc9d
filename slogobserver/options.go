package slogobserver

import (
	"log/slog"
	"time"
)

// Defaults of the options.
const (
	// DefaultDeniedLevel is the level of the records of denials.
	DefaultDeniedLevel = slog.LevelInfo
	// DefaultErrorLevel is the level of the records of errors.
	DefaultErrorLevel = slog.LevelWarn
	// DefaultRecords and DefaultInterval bound the records: at most DefaultRecords records
	// of denials, and as many of errors, per DefaultInterval.
	DefaultRecords = 10
	// DefaultInterval: see DefaultRecords.
	DefaultInterval = time.Minute
)

// Option configures an Observer built by New.
type Option func(*options)

type options struct {
	deniedLevel slog.Level
	errorLevel  slog.Level
	records     int
	interval    time.Duration
	clock       func() time.Time
}

func defaultOptions() options {
	return options{
		deniedLevel: DefaultDeniedLevel,
		errorLevel:  DefaultErrorLevel,
		records:     DefaultRecords,
		interval:    DefaultInterval,
	}
}

// WithDeniedLevel sets the level of the records of denials. Default: DefaultDeniedLevel
// (Info).
func WithDeniedLevel(l slog.Level) Option {
	return func(o *options) { o.deniedLevel = l }
}

// WithErrorLevel sets the level of the records of errors. Default: DefaultErrorLevel
// (Warn).
func WithErrorLevel(l slog.Level) Option {
	return func(o *options) { o.errorLevel = l }
}

// WithRecordLimit sets how many records of denials, and how many of errors, the Observer
// writes at most per interval; the others are dropped and counted, and the next record
// written says how many were (the attribute "dropped"). Default: DefaultRecords (10) per
// DefaultInterval (1 minute). A records or interval below 1 means its default.
func WithRecordLimit(records int, interval time.Duration) Option {
	return func(o *options) {
		if records < 1 {
			records = DefaultRecords
		}
		if interval <= 0 {
			interval = DefaultInterval
		}
		o.records, o.interval = records, interval
	}
}

// WithClock makes the Observer read the time from now instead of the system's clock, for
// its record limit, so that tests can move time by hand. Default: the system clock. A nil
// now means the default.
func WithClock(now func() time.Time) Option {
	return func(o *options) { o.clock = now }
}
