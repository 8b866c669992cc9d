package distributed

import (
	"strings"

	"github.com/redis/go-redis/v9"
)

// slotCount is the number of hash slots of a Redis Cluster.
const slotCount = 16384

// sharded reports whether client spreads keys over several servers by key: a Cluster by hash
// slot, a Ring by a hash of the same part of the key (go-redis hashes a Ring's keys on their
// hash tag too). On either, keys of one hash slot always live together, and keys of
// different slots may not. Any other client (one server, Sentinel) holds every key.
func sharded(client redis.Scripter) bool {
	switch client.(type) {
	case *redis.ClusterClient, *redis.Ring:
		return true
	}
	return false
}

// slot returns the Redis Cluster hash slot of key: CRC16 (XMODEM) of its hash tag, the part
// between the first "{" and the first "}" after it when that part is not empty, or of the
// whole key, modulo 16384.
func slot(key string) int {
	if open := strings.IndexByte(key, '{'); open >= 0 {
		if n := strings.IndexByte(key[open+1:], '}'); n > 0 {
			key = key[open+1 : open+1+n]
		}
	}
	var crc uint16
	for i := 0; i < len(key); i++ {
		crc ^= uint16(key[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc) % slotCount
}
