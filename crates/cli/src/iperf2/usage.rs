//! The iperf 2 dialect's usage texts and version line, in 2.1.8's layout.

/// The version line (`-v`).
pub fn version_line() -> String {
    format!(
        "iperf version 2.1.8 (wirespeed {}) pthreads\n",
        wirespeed_core::version::VERSION
    )
}

/// The short usage (no `-s`/`-c`).
pub fn short_usage(prog: &str) -> String {
    format!("Usage: {prog} [-s|-c host] [options]\nTry `{prog} --help' for more information.\n")
}

/// The long usage (`-h`), in iperf 2's layout, listing what wirespeed's
/// iperf 2 dialect accepts.
pub fn long_usage(prog: &str) -> String {
    format!(
        "Usage: {prog} [-s|-c host] [options]
       {prog} [-h|--help] [-v|--version]

Client/Server:
  -b, --bandwidth #[kmgKMG | pps]  bandwidth to send at in bits/sec or packets per second (UDP default 1 Mbit/sec; TCP: a rate limit)
  -e, --enhanced    use enhanced reporting giving more tcp/udp and traffic information
  -f, --format    [abkmgABKMG]  format to report: adaptive, bits, Kbits, Mbits, Gbits (upper case: bytes)
      --hide-ips           hide ip addresses and host names within outputs
  -i, --interval  #        seconds between periodic bandwidth reports (fractions allowed)
  -l, --len       #[kmKM]    length of buffer in bytes to read or write (Defaults: TCP=128K, v4 UDP=1470, v6 UDP=1450)
  -m, --print_mss          print TCP maximum segment size
  -o, --output    <filename> output the report or error message to this specified file
  -p, --port      #[-#]    client/server port to listen on/send on and to connect
                           (a range n-m: one listener, or one client flow, per port; TCP)
      --permit-key=<key>   permit key a client must send (TCP only)
      --sum-only           output sum only reports
  -u, --udp                use UDP rather than TCP
  -w, --window    #[KM]    TCP window size (socket buffer size)
  -z, --realtime           request realtime scheduler
  -B, --bind <host>[:<port>][%<dev>] bind to <host>, ip addr and optional port and device
  -C, --compatibility      for use with older versions: send no header
  -M, --mss       #        set TCP maximum segment size using TCP_MAXSEG
  -N, --nodelay            set TCP no delay, disabling Nagle's Algorithm
  -S, --tos       #        set the socket's IP_TOS (byte) field
  -Z, --tcp-congestion <algo>  set TCP congestion control algorithm (Linux only)
      --tcp-cca <algo>     the same (iperf 2.2's name; -Z wins when both are given)
      --sync-transfer-id   tell the server each flow's id (iperf 2.2; a TCP one makes a 2.1.8 server connect back)
  -W, --suggest_win_size   after a TCP test, say what limited the sender and suggest a window (-w)
  -4, -6                   only use IPv4, only use IPv6

Server specific:
  -s, --server             run in server mode
  -1, --singleclient       run one server at a time
  -t, --time      #        time in seconds to listen for new connections as well as to receive traffic (default not set)
  -B, --bind <ip>[%<dev>]  bind to this address and optional device
  -D, --daemon             run the server as a daemon
  -H, --ssm-host <ip>      set the SSM source, use with -B for (S,G)
  -U, --single_udp         run in single threaded UDP mode (one client at a time)
      --tcp-rx-window-clamp #[KM]  cap the TCP receive window the server offers (TCP_WINDOW_CLAMP)
      --tos-override <val> TOS of the server's sockets, for what it sends back (-R, --full-duplex)
      --histograms[=binwidth[u|m],bins,ci_lower,ci_upper]  latency histograms (needs the client's --trip-times)
  -P, --parallel  #        exit after this many connections have been served
  -b, --bandwidth #[kmgKMG]  read each TCP flow at most at this rate
  -c, --client    <host>   serve only this client
      --allow <list>       serve only these clients: addresses, CIDR networks, host names
                           (comma-separated, repeatable; a wirespeed addition)
      --deny <list>        refuse these clients (wins over --allow and -c)
      --max-tests #        serve at most this many clients at once (default: no limit)
      --server-bitrate-limit #[KMG][/#]  end a test faster than this on average over # s (default 5)
      --server-max-duration #  refuse a test longer than # seconds (these three: the iperf3 server's)
      --rcv-timeout #      end a test that received or moved nothing for # ms (default 60000)
      --ui <addr>:<port>   serve a web page watching the tests live (a wirespeed addition)
      --db <path>          where --ui keeps its history (SQLite; :memory: keeps none)
      --rpm-listen <addr>:<port>  also serve networkQuality's responsiveness test over HTTPS
                           (config at /.well-known/nq; a wirespeed addition)
      --tls-cert <file>    --rpm-listen's certificate chain (PEM; default: self-signed)
      --tls-key <file>     the private key of --tls-cert (PEM)
  -V, --ipv6_domain        Enable IPv6 reception by setting the domain and socket to AF_INET6 (Can receive on both IPv4 and IPv6)

Client specific:
  -c, --client    <host>   run in client mode, connecting to <host>
      --bounceback[=n]     request/response test: bursts of n (default 10) -l byte writes (default 100) echoed back
      --bounceback-congest[=up|down|bidir][,n]  n TCP load flows beside the bounceback (default bidir,1)
      --working-load[=up|down|bidir][,n]  the same beside any client test (iperf 2.2)
      --working-load-cca <algo>  the working load's TCP congestion control (iperf 2.2)
      --bounceback-hold #  server holds each message # ms before replying
      --bounceback-no-quickack  do not set TCP_QUICKACK on bounceback sockets
      --bounceback-period #  seconds between bounceback bursts (default 1; 0 = back to back)
      --bounceback-txdelay #  seconds the bounceback flow waits after connecting (the load runs)
      --bounceback-request #  request size in bytes (iperf 2.2; -l wins)
      --bounceback-reply #  reply size in bytes (iperf 2.2; default the request's)
      --burst-period #     TCP: send a burst (--burst-size, default 1M) every # seconds (default 1)
      --burst-size #[KMG]  TCP: bytes per periodic burst, a whole number of -l writes
      --ipg #              UDP: gap in milliseconds between the datagrams of an isochronous frame
      --isochronous[=fps:mean,stddev]  send frames (video-like bursts), 60:20m,0 by default
      --connect-only[=n]   run a connect only test (n connects per flow, default 10)
      --dscp #             set the IP DSCP (the TOS byte's upper six bits; iperf 2.2)
      --ecn ect0|ect1      UDP: set the ECN field (with -S/--dscp); what arrived is counted
      --udp-l4s            UDP: an L4S sender (iperf 2.2.1's): ECT(1), paced by the server's acks
      --connect-retries #  number of times to retry tcp connect
  -d, --dualtest           Do a bidirectional test simultaneously (multiple sockets)
      --full-duplex        run full duplex test using same socket
      --fq-rate #[kmgKMG]  fair-queue socket pacing (lower case bits, upper case bytes per second)
      --fq-rate-step #[kmgKMG]  TCP: raise the pacing rate by this every step interval (iperf 2.2;
                           starts at one step without --fq-rate)
      --fq-rate-step-interval #  seconds between pacing steps (default 1; iperf 2.2)
      --local-only[=1|0]   SO_DONTROUTE: reach only directly connected networks
      --incr-dstport       send parallel flow i to the -p port + i
      --tcp-quickack       TCP_QUICKACK after every read (the server's reads too, through the header)
      --tcp-write-prefetch #[KM]  write only when less than this is queued unsent (TCP_NOTSENT_LOWAT; implies -e)
  -n, --num       #[kmgKMG]    number of bytes to transmit (instead of -t)
      --omit #             TCP: report the first # seconds as omitted, out of the totals
                           (within -t; iperf 2 master)
      --send-delay #       TCP: hold each segment # ms before it leaves (TCP_TX_DELAY, effective
                           under the fq qdisc; iperf 2 master's name; UDP's is not built)
      --set-rand-seed #    seed the draws of -b mean,stdev and --isochronous sizes (iperf 2 master)
      --tcp-tx-delay #     the same as --send-delay (iperf 2.2's name)
      --no-udp-fin         no UDP FIN/report exchange at the end of the test
  -r, --tradeoff           Do a bidirectional test individually
  -t, --time      #        time in seconds to transmit for (default 10 secs)
      --trip-times         enable end to end measurements (requires client and server clock sync)
      --txstart-time       unix epoch time to schedule first write and start traffic
  -B, --bind [<ip> | <ip:port>] bind ip (and optional port) from which to source traffic
  -F, --file_input <name>  input the data to be transmitted from a file
  -I, --stdin_input        input the data to be transmitted from stdin
  -L, --listenport #       port to receive bidirectional tests back on
  -P, --parallel  #        number of parallel client threads to run
  -R, --reverse            reverse the test (client receives, server sends)
  -S, --tos                IP DSCP or tos settings
  -T, --ttl       #        time-to-live, for multicast (default 1)
  -V, --ipv6_domain        Set the domain to IPv6 (send packets over IPv6)
  -X, --peer-detect        perform server version detection and version exchange

wirespeed additions:
  -J, --json               print the results as one JSON document
      --json-stream        print JSON lines, one object per event as the test runs
      --report <file.html> write a self-contained HTML report with plots when the test ends
      --live               client on a terminal: a live status line (current and average rate)
      --udp-search         client: find the highest UDP rate with acceptable loss
                           (probes of -t secs, default 2, starting at -b; implies -u)
      --max-loss #[%]      loss the search accepts (default 0.1%)
      --latency[=#]        client: measure round trips beside the load, # probes per
                           second (default 10), and before it (the idle RTT)
      --rpm                client: the responsiveness test (TCP-only RPM): TCP load flows,
                           one more a second up to -P (16), until goodput saturates

Miscellaneous:
  -x, --reportexclude [CDMSV]   exclude C(connection) D(data) M(multicast) S(settings) V(server) reports
  -y, --reportstyle C      report as a Comma-Separated Values
  -h, --help               print this message and quit
  -v, --version            print version information and quit

[kmgKMG] Indicates options that support a k,m,g,K,M or G suffix
Lowercase format characters are 10^3 based and uppercase are 2^n based
(e.g. 1k = 1000, 1K = 1024, 1m = 1,000,000 and 1M = 1,048,576)

Accepted tos values are: af11, af12, af13, af21, af22, af23, af31, af32, af33, af41, af42, af43,
cs0, cs1, cs2, cs3, cs4, cs5, cs6, cs7, ef, le, nqb, nqb2, ac_be, ac_bk, ac_vi, ac_vo, lowdelay, throughput,
reliability, or a numeric value.

The TCP window size option can be set by the environment variable
TCP_WINDOW_SIZE. Most other options can be set by an environment variable
IPERF_<long option name>, such as IPERF_BANDWIDTH.

wirespeed speaks iperf 2.x and iperf3; run it without --iperf2 for the iperf3 options.
"
    )
}
