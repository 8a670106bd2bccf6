// Package jsonraw holds the JSON text primitives that the MCP protocol
// (package mcp) and the workspace tools (internal/fstools) share: a
// validator that accepts exactly what encoding/json.Valid accepts, a
// scanner over the members of an object, a string decoder and encoder, and
// the escaped size of a string (so that a tool can keep its result within
// one message). None of them uses reflection; they exist for speed, and
// fuzz targets hold each to encoding/json.
package jsonraw
