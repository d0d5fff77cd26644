//! The iperf3 dialect's usage texts, in iperf3's layout.

/// The short usage printed after a parameter error.
pub fn short_usage(prog: &str) -> String {
    format!("Usage: {prog} [-s|-c host] [options]\nTry `{prog} --help' for more information.\n")
}

/// The long usage, in iperf3's layout.
pub fn long_usage(prog: &str) -> String {
    format!(
        "Usage: {prog} [-s|-c host] [options]
       {prog} [-h|--help] [-v|--version]
       {prog} --loopback [client options]     (test against a built-in server on 127.0.0.1)
       {prog} --iperf2 [iperf 2 options]      (iperf 2.x command line, output and protocol)

Server or Client:
  -p, --port      #         server port to listen on/connect to
  -f, --format   [kmgtKMGT] format to report: Kbits, Mbits, Gbits, Tbits
  -i, --interval  #         seconds between periodic throughput reports
  -I, --pidfile file        write PID file
  -F, --file name           xmit/recv the specified file
  -A, --affinity n/n,m      set CPU affinity
  -B, --bind <host>[%<dev>] bind to the interface associated with the address <host>
                            (optional <dev> equivalent to `--bind-dev <dev>`)
  --bind-dev <dev>          bind to the network interface with SO_BINDTODEVICE
  -V, --verbose             more detailed output
  -J, --json                output in JSON format
  --json-stream             output in line-delimited JSON format
  --json-stream-full-output output in JSON format with JSON streams enabled
  --logfile f               send output to a log file
  --forceflush              force flushing output at every interval
  --timestamps<=format>     emit a timestamp at the start of each output line
                            (optional \"=\" and format string as per strftime(3))
  --rcv-timeout #           idle timeout for receiving data (default 120000 ms)
  --snd-timeout #           timeout for unacknowledged TCP data
                            (in ms, default is system settings)
  --cntl-ka[=#/#/#]         use control connection TCP keepalive - KEEPIDLE/KEEPINTV/KEEPCNT
                            each value is optional with system settings default
  -m, --mptcp               use MPTCP rather than plain TCP
  --use-pkcs1-padding       authentication with PKCS#1 v1.5 padding, as iperf3 3.16
                            and older use (less secure; the default is OAEP)
  -d, --debug[=#]           emit debugging output
                            (optional optional \"=\" and debug level: 1-4. Default is 4 - all messages)
  -v, --version             show version information and quit
  -h, --help                show this message and quit
Server specific:
  -s, --server              run in server mode
  -D, --daemon              run the server as a daemon
  -1, --one-off             handle one client connection then exit
  --server-bitrate-limit #[KMG][/#]   server's total bit rate limit (default 0 = no limit)
                            (optional slash and number of secs interval for averaging
                            total data rate.  Default is 5 seconds)
  --idle-timeout #          restart idle server after # seconds in case it
                            got stuck (default - no timeout)
  --server-max-duration #   max. time (in seconds) a client may ask for (default 0 = no limit)
  --max-tests #             tests served at once (default 16); more get \"server is busy\"
  --max-streams #           streams a test may open (default 10000)
  --allow <list>            serve only these clients: addresses, CIDR networks, host names
                            (comma-separated; repeatable; names resolved at start)
  --deny <list>             refuse these clients (deny wins over --allow); an iperf3 client
                            is told \"test authorization failed\", ours \"access denied\"
  --rsa-private-key-path    path to the RSA private key used to decrypt
                            authentication credentials
  --authorized-users-path   path to the configuration file containing user
                            credentials
  --time-skew-threshold     time skew threshold (in seconds) between the server
                            and client during the authentication process (default 10)
Client specific:
  -c, --client <host>[%<dev>] run in client mode, connecting to <host>
                              (option <dev> equivalent to `--bind-dev <dev>`)
  --sctp                    use SCTP rather than TCP
  -X, --xbind <name>        bind SCTP association to links
  --nstreams      #         number of SCTP streams
  -u, --udp                 use UDP rather than TCP
  --connect-timeout #       timeout for control connection setup (ms)
  -b, --bitrate #[KMG][/#]  target bitrate in bits/sec (0 for unlimited)
                            (default 1 Mbit/sec for UDP, unlimited for TCP)
                            (optional slash and packet count for burst mode)
                            (#pps gives a rate in packets per second)
  --pacing-timer #[KMG]     set the timing for pacing, in microseconds (default 1000):
                            a UDP sender that fell behind catches up at most this much at once
  --fq-rate #[KMG]          enable fair-queuing based socket pacing in
                            bits/sec (Linux only)
  --no-fq-socket-pacing     deprecated: accepted with a warning, as iperf3 does
  -t, --time      #         time in seconds to transmit for (default 10 secs)
  -n, --bytes     #[KMG]    number of bytes to transmit (instead of -t)
  -k, --blockcount #[KMG]   number of blocks (packets) to transmit (instead of -t or -n)
  -l, --length    #[KMG]    length of buffer to read or write
                            (default 128 KB for TCP, dynamic or 1460 for UDP)
                            (UDP: each datagram is exactly this long, 16..65507)
  --cport         <port>    bind to a specific client port (TCP and UDP, default: ephemeral port)
  -P, --parallel  #         number of parallel client streams to run
  -R, --reverse             run in reverse mode (server sends, client receives)
  --bidir                   run in bidirectional mode.
                            Client and server send and receive data.
  -w, --window    #[KMG]    set send/receive socket buffer sizes
                            (indirectly sets TCP window size)
  -C, --congestion <algo>   set TCP congestion control algorithm (Linux and FreeBSD only)
  -M, --set-mss   #         set TCP/SCTP maximum segment size (MTU - 40 bytes)
  -N, --no-delay            set TCP/SCTP no delay, disabling Nagle's Algorithm
  -4, --version4            only use IPv4
  -6, --version6            only use IPv6
  -S, --tos N               set the IP type of service, 0-255.
                            The usual prefixes for octal and hex can be used,
                            i.e. 52, 064 and 0x34 all specify the same value.
  --dscp N or --dscp val    set the IP dscp value, either 0-63 or symbolic.
                            Numeric values can be specified in decimal,
                            octal and hex (see --tos above).
  -L, --flowlabel N         set the IPv6 flow label (only supported on Linux)
  -Z, --zerocopy            use a 'zero copy' method of sending data
  --skip-rx-copy            ignore received messages using MSG_TRUNC option
  -O, --omit N              perform pre-test for N seconds and omit the pre-test statistics
  -T, --title str           prefix every output line with this string
  --extra-data str          data string to include in client and server JSON
  --get-server-output       get results from server
  --udp-counters-64bit      use 64-bit counters in UDP test packets
  --repeating-payload       use repeating pattern in payload, instead of
                            randomized payload (like in iperf2)
  --dont-fragment           set IPv4 Don't Fragment flag
  --gsro                    ask the server for UDP GSO/GRO too (wirespeed uses them
                            whenever the kernel has them)
  --username                username for authentication (the password comes from
                            $IPERF3_PASSWORD, or is asked on the terminal)
  --rsa-public-key-path     path to the RSA public key used to encrypt
                            authentication credentials
wirespeed additions:
  --loopback                run a client against a built-in server on 127.0.0.1
  --report file.html        write a self-contained HTML report with plots when the test
                            ends (a server writes file-N.html for its test number N)
  --live                    client on a terminal: show a live status line with the
                            current and average rate and a sparkline
  --udp-search              client: find the highest UDP rate with acceptable loss
                            (probes of -t secs, default 2, starting at -b)
  --max-loss #[%]           loss the search accepts (default 0.1%)
  --latency[=#]             client: measure round trips beside the load, # probes per
                            second (default 10), and before it (the idle RTT)
  --rpm                     client: the responsiveness test (TCP-only RPM): ramp up
                            TCP load flows (up to -P, default 16) until goodput
                            saturates, probe round trips, stop when stable or at -t
  --rpm=<url>               the standard responsiveness test (HTTP/2, TLS 1.3) against a
                            networkQuality server's config URL (https://host/.well-known/nq;
                            also --rpm <url>): download then upload (-R: download only),
                            each until stable or -t secs (default 20), up to -P (default 16)
                            connections
  --cacert <file>           --rpm=<url>: trust the PEM certificate(s) in <file>
  --insecure                --rpm=<url>: do not verify the server's certificate
  --metrics <addr>:<port>   server: serve Prometheus metrics over HTTP at <addr>:<port>
                            (no token or access list: :<port> is every address)
                            (a client's --rpm or --udp-search: its results, while it runs)
  --ui <addr>:<port>        server: serve a web page watching its tests live
  --db <path>               server: where --ui keeps its history (SQLite; default
                            in the user's data directory; :memory: keeps none)
  --rpm-listen <addr>:<port> server: also serve networkQuality's responsiveness
                            test (HTTPS, HTTP/2 and HTTP/1.1; config at
                            /.well-known/nq)
  --quic-perf-listen <addr>:<port> server: also serve QUIC perf clients (UDP,
                            ALPN perf, draft-banks-quic-performance)
  --tls-cert <file>         server: the certificate chain (PEM) of --rpm-listen and
                            --quic-perf-listen (without it a self-signed one is
                            made and its SHA-256 printed)
  --tls-key <file>          server: the private key of --tls-cert (PEM)
  --quic-perf <host>:<port> a QUIC perf client (ALPN perf) instead of an iperf test:
                            upload (-n bytes or -t secs; -R: download), -P streams
                            on one connection, -i, -l, -J, --json-stream
  -q, --quic                the test's data over QUIC (to a wirespeed server's port,
                            UDP): -P streams on one connection; with -t, -n, -k, -l,
                            -b, -R, --bidir, -O, -i, -J, --json-stream
  --csv                     print iperf 2's CSV rows (as its -y C) instead of text
  --ecn ect0|ect1           UDP: set the ECN field (with -S/--dscp's DSCP); the
                            receiver counts what arrived and says what the path did
  {prog} ui [--listen <addr>:<port>]
                            serve a web page to run tests and watch them live
  {prog} report RESULT.json [-o FILE.html]
                            render saved -J output (ours or iperf3's) as an HTML report
  {prog} --completions bash|zsh|fish
                            print a shell completion script

[KMG] indicates options that support a K/M/G suffix for kilo-, mega-, or giga-

wirespeed speaks iperf3 and iperf 2.x; see `{prog} --iperf2 --help` for the iperf 2 options.
"
    )
}
