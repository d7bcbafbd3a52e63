<?php
// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * php_memcached_ref.php - PHP's memcached extension (Debian's
 * php-memcached, libmemcached underneath) as the oracle of where a key
 * lives: this script's own memcached processes on 127.0.0.1, every key
 * set through a Memcached object with the options under test, then each
 * memcached asked directly which keys it holds.
 *
 *   php php_memcached_ref.php MODE [LISTS] [KEYS]
 *
 * MODE: default (no options: modula, keysteer's modula-oaat),
 * consistent (OPT_DISTRIBUTION = DISTRIBUTION_CONSISTENT: ketama-plain),
 * libketama (OPT_LIBKETAMA_COMPATIBLE: ketama). Output as
 * pylibmc_ref.py's: "ring I", "server HOST:PORT" lines, "key HEX INDEX"
 * lines, "end". The memcached processes are stopped by their own handles
 * (proc_terminate: SIGTERM to their pids) on every exit path.
 */
const NSERVERS = 8;
$procs = [];

function stop_all()
{
	global $procs;
	foreach ($procs as $p)
		proc_terminate($p);
	foreach ($procs as $p)
		proc_close($p);
	$procs = [];
}

function free_port()
{
	$s = stream_socket_server('tcp://127.0.0.1:0');
	$name = stream_socket_get_name($s, false);
	fclose($s);
	return (int)substr($name, strrpos($name, ':') + 1);
}

function start($port)
{
	global $procs;
	$args = ['memcached', '-l', '127.0.0.1', '-p', (string)$port,
		 '-U', '0', '-m', '64'];
	if (posix_geteuid() == 0)
		array_push($args, '-u', 'nobody');
	$null = ['file', '/dev/null', 'w'];
	$procs[] = proc_open($args, [0 => ['file', '/dev/null', 'r'],
				    1 => $null, 2 => $null], $pipes);
	for ($i = 0; $i < 100; $i++) {
		$c = @stream_socket_client("tcp://127.0.0.1:$port", $e, $es, 0.2);
		if ($c) {
			fclose($c);
			return;
		}
		usleep(50000);
	}
	fwrite(STDERR, "memcached on port $port did not start\n");
	exit(1);
}

function client($servers, $mode)
{
	$m = new Memcached();
	if ($mode == 'consistent')
		$m->setOption(Memcached::OPT_DISTRIBUTION,
			      Memcached::DISTRIBUTION_CONSISTENT);
	else if ($mode == 'libketama')
		$m->setOption(Memcached::OPT_LIBKETAMA_COMPATIBLE, true);
	foreach ($servers as $s)
		$m->addServer($s[0], $s[1]);
	return $m;
}

$mode = $argv[1] ?? '';
if (!in_array($mode, ['default', 'consistent', 'libketama'])) {
	fwrite(STDERR, "usage: php_memcached_ref.php default|consistent|libketama [LISTS] [KEYS]\n");
	exit(2);
}
$nlists = (int)($argv[2] ?? 20);
$nkeys = (int)($argv[3] ?? 500);
register_shutdown_function('stop_all');
pcntl_async_signals(true);
pcntl_signal(SIGTERM, function () { exit(1); });
// distinct: the kernel may hand out a just-closed port again
$ports = [];
while (count($ports) < NSERVERS) {
	$p = free_port();
	if (!in_array($p, $ports))
		$ports[] = $p;
}
foreach ($ports as $p)
	start($p);
mt_srand(1);
$alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789:_-.';
for ($li = 0; $li < $nlists; $li++) {
	$n = 1 + $li % NSERVERS;
	$order = $ports;
	shuffle($order);
	$servers = [];
	foreach (array_slice($order, 0, $n) as $p)
		$servers[] = ['127.0.0.1', $p];
	$flush = client($servers, 'default');
	$flush->flush();
	$flush->quit();
	$keys = [];
	for ($i = 0; $i < $nkeys; $i++) {
		$len = [1, 8, 16, 40, 100, 250][mt_rand(0, 5)];
		// ASCII only: php-memcached refuses a key with a byte >= 0x80
		// or a space ("A BAD KEY WAS PROVIDED") before it hashes it
		$k = '';
		while (strlen($k) < $len)
			$k .= $alphabet[mt_rand(0, strlen($alphabet) - 1)];
		$keys[substr($k, 0, 250)] = 1;
	}
	$keys = array_map('strval', array_keys($keys));
	$m = client($servers, $mode);
	foreach ($keys as $k)
		$m->set($k, '1');
	$m->quit();
	$where = [];
	foreach ($servers as $i => $s) {
		$one = client([$s], 'default');
		foreach ($one->getMulti($keys) ?: [] as $k => $v)
			$where[(string)$k] = $i;
		$one->quit();
	}
	echo "ring $li\n";
	foreach ($servers as $s)
		echo "server {$s[0]}:{$s[1]}\n";
	foreach ($keys as $k)
		if (isset($where[$k]))
			echo 'key ', bin2hex($k), ' ', $where[$k], "\n";
	echo "end\n";
	flush();
}
