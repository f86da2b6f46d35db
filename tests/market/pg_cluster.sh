#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The market tests' shared PostgreSQL cluster (a ctest fixture): one per ctest run and uid.
#   pg_cluster.sh start DIR | stop DIR
# initdb in DIR as an unprivileged user (nobody when called as root: PostgreSQL refuses
# root), Unix socket in DIR only, no TCP, no system service. DIR/ready marks it usable.
set -euo pipefail
bin=/usr/lib/postgresql/15/bin
cmd=$1 dir=$2
as_pg() { if [[ $(id -u) -eq 0 ]]; then setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; else "$@"; fi; }
case $cmd in
  start)
    [[ -x $bin/initdb ]] || { echo "pg_cluster: $bin/initdb missing: tests start their own or skip" >&2; exit 0; }
    if [[ -d $dir/data ]]; then as_pg "$bin/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true; fi
    rm -rf "$dir"
    mkdir -p "$dir"
    [[ $(id -u) -eq 0 ]] && chown 65534:65534 "$dir"
    as_pg "$bin/initdb" -D "$dir/data" -U corral --auth=trust --no-sync -E UTF8 >"$dir/initdb.log" 2>&1
    # fsync off: the tests kill corral, never PostgreSQL.
    as_pg "$bin/pg_ctl" -D "$dir/data" -w -t 240 -l "$dir/pg.log" \
      -o "-k $dir -c listen_addresses= -c fsync=off -c max_connections=400" start >/dev/null
    touch "$dir/ready"
    ;;
  stop)
    [[ -d $dir/data ]] && as_pg "$bin/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
    rm -rf "$dir"
    ;;
  *) echo "usage: pg_cluster.sh start|stop DIR" >&2; exit 2 ;;
esac
