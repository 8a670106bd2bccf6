// Package metrics keeps the daemon's counters, gauges and histograms and
// writes them in the Prometheus text exposition format, version 0.0.4:
// the few types a scrape needs, written by hand so that the module needs
// no metrics library.
//
// Every family is registered once, with a fixed set of label names; the
// values of those labels must come from bounded sets (a route name, a
// status code, a tool name from the fixed tool set), never from a path, a
// command or a client's input, so that the number of series stays small.
// Updating a metric is a few atomic operations and allocates nothing.
package metrics
