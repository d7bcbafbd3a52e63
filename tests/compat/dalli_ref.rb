#!/usr/bin/ruby
# dalli_ref.rb - Ruby's dalli (Debian's ruby-dalli) as the oracle of which
# server owns a key: dalli's own Dalli::Ring, built from Dalli server
# objects exactly as Dalli::Client builds them, answers for every key.
# Nothing connects: the ring's lookup is called below the liveness check
# (server_for_key would open a socket to see that the server is alive).
#
#   dalli_ref.rb < requests > answers
#
# Requests, one a line (from ring_compat's clients_compat.c):
#   ring              a new server list follows
#   server SPEC       dalli's server string, "host:port:weight"
#   key HEX           a key (hex of its bytes)
# Answers: one line per key, the index of its server in the list.
require 'dalli'

def ring_of(specs)
  servers = specs.map { |s| Dalli::Protocol::Binary.new(s, {}) }
  Dalli::Ring.new(servers, {})
end

def owner(ring, key)
  return 0 if ring.continuum.nil? # one server: dalli skips the ring
  server = ring.send(:server_for_hash_key, ring.send(:hash_for, key))
  ring.servers.index(server)
end

specs = []
ring = nil
$stdout.sync = false
$stdin.each_line do |line|
  word, arg = line.chomp.split(' ', 2)
  case word
  when 'ring'
    specs = []
    ring = nil
  when 'server'
    specs << arg
  when 'key'
    ring ||= ring_of(specs)
    puts owner(ring, [arg].pack('H*'))
  else
    abort "dalli_ref.rb: bad request line #{line.inspect}"
  end
end
