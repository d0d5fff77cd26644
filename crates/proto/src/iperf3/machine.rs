//! The order of the control exchange, as two small state machines.
//!
//! The drivers feed each state byte they read to the machine, which says what
//! to do next or why the byte is wrong here. Everything about *when* a
//! message is legal lives here, not in the socket code.

use super::State;
use crate::error::{Code, ProtoError as Error};

/// Where a client is in the exchange.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientPhase {
    /// Cookie sent; waiting for PARAM_EXCHANGE.
    AwaitParams,
    /// Parameters sent; waiting for CREATE_STREAMS.
    AwaitCreate,
    /// Streams open; waiting for TEST_START.
    AwaitStart,
    /// Clocks started; waiting for TEST_RUNNING.
    AwaitRunning,
    /// Data moving.
    Running,
    /// TEST_END sent; waiting for EXCHANGE_RESULTS.
    Ending,
    /// Results exchanged; waiting for DISPLAY_RESULTS.
    AwaitDisplay,
    /// DISPLAY_RESULTS seen; IPERF_DONE to send.
    Done,
}

/// What the client driver must do for a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientAction {
    /// Send the parameter JSON.
    SendParams,
    /// Open the data streams.
    CreateStreams,
    /// Start the test clocks.
    StartClocks,
    /// Start the data threads.
    StartData,
    /// Stop data (if still running), send our results, read the server's.
    ExchangeResults,
    /// Print the results, send IPERF_DONE, drain and close.
    DisplayResults,
    /// The server refused us (busy, or bad cookie).
    AccessDenied,
    /// Read the two ints that follow and report the server's error.
    ServerError,
    /// The server was interrupted.
    ServerTerminated,
    /// Nothing to do.
    Ignore,
}

/// The client's view of the exchange.
#[derive(Debug, Clone)]
pub struct ClientMachine {
    phase: ClientPhase,
}

impl Default for ClientMachine {
    fn default() -> Self {
        ClientMachine {
            phase: ClientPhase::AwaitParams,
        }
    }
}

impl ClientMachine {
    /// A client that has just sent its cookie.
    pub fn new() -> ClientMachine {
        ClientMachine::default()
    }

    /// Current phase.
    pub fn phase(&self) -> ClientPhase {
        self.phase
    }

    /// The client decided the test is over and sent TEST_END.
    pub fn test_end_sent(&mut self) {
        if self.phase == ClientPhase::Running {
            self.phase = ClientPhase::Ending;
        }
    }

    /// Results were exchanged.
    pub fn results_exchanged(&mut self) {
        self.phase = ClientPhase::AwaitDisplay;
    }

    /// Feeds one state byte from the server.
    pub fn on_byte(&mut self, byte: u8) -> Result<ClientAction, Error> {
        use ClientPhase as P;
        let unexpected = || Error::new(Code::MESSAGE);
        let state = State::from_byte(byte).ok_or_else(unexpected)?;
        let action = match (state, self.phase) {
            (State::AccessDenied, _) => ClientAction::AccessDenied,
            (State::ServerError, _) => ClientAction::ServerError,
            (State::ServerTerminate, _) => ClientAction::ServerTerminated,
            (State::IperfDone, _) => ClientAction::Ignore,
            (State::ParamExchange, P::AwaitParams) => {
                self.phase = P::AwaitCreate;
                ClientAction::SendParams
            }
            (State::CreateStreams, P::AwaitCreate) => {
                self.phase = P::AwaitStart;
                ClientAction::CreateStreams
            }
            (State::TestStart, P::AwaitStart) => {
                self.phase = P::AwaitRunning;
                ClientAction::StartClocks
            }
            (State::TestRunning, P::AwaitRunning) => {
                self.phase = P::Running;
                ClientAction::StartData
            }
            // The server may end a test on its own (watchdog); treat an early
            // EXCHANGE_RESULTS like the end of the test.
            (State::ExchangeResults, P::Running | P::Ending) => ClientAction::ExchangeResults,
            (State::DisplayResults, P::AwaitDisplay) => {
                self.phase = P::Done;
                ClientAction::DisplayResults
            }
            _ => return Err(unexpected()),
        };
        Ok(action)
    }
}

/// Where a server's test is in the exchange.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerPhase {
    /// Before TEST_RUNNING was sent.
    Setup,
    /// Data moving.
    Running,
    /// Results sent, DISPLAY_RESULTS sent; waiting for IPERF_DONE.
    AwaitDone,
}

/// What the server driver must do for a client message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerAction {
    /// End the test and exchange results.
    EndTest,
    /// The client was interrupted: summarise and close.
    ClientTerminated,
    /// The client is finished: close.
    Done,
    /// Nothing to do.
    Ignore,
}

/// The server's view of one test's exchange.
#[derive(Debug, Clone)]
pub struct ServerMachine {
    phase: ServerPhase,
}

impl Default for ServerMachine {
    fn default() -> Self {
        ServerMachine {
            phase: ServerPhase::Setup,
        }
    }
}

impl ServerMachine {
    /// A test being set up.
    pub fn new() -> ServerMachine {
        ServerMachine::default()
    }

    /// TEST_RUNNING was sent.
    pub fn running(&mut self) {
        self.phase = ServerPhase::Running;
    }

    /// DISPLAY_RESULTS was sent.
    pub fn results_sent(&mut self) {
        self.phase = ServerPhase::AwaitDone;
    }

    /// Current phase.
    pub fn phase(&self) -> ServerPhase {
        self.phase
    }

    /// Feeds one state byte from the client.
    pub fn on_byte(&mut self, byte: u8) -> Result<ServerAction, Error> {
        let unexpected = || Error::new(Code::MESSAGE);
        let state = State::from_byte(byte).ok_or_else(unexpected)?;
        Ok(match (state, self.phase) {
            (State::TestStart, _) => ServerAction::Ignore,
            (State::ClientTerminate, _) => ServerAction::ClientTerminated,
            (State::TestEnd, ServerPhase::Running) => ServerAction::EndTest,
            (State::TestEnd, _) => ServerAction::Ignore,
            (State::IperfDone, ServerPhase::AwaitDone) => ServerAction::Done,
            _ => return Err(unexpected()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_follows_a_normal_test() {
        let mut m = ClientMachine::new();
        let seq = [
            (State::ParamExchange, ClientAction::SendParams),
            (State::CreateStreams, ClientAction::CreateStreams),
            (State::TestStart, ClientAction::StartClocks),
            (State::TestRunning, ClientAction::StartData),
        ];
        for (s, a) in seq {
            assert_eq!(m.on_byte(s.to_byte()).unwrap(), a);
        }
        m.test_end_sent();
        assert_eq!(
            m.on_byte(State::ExchangeResults.to_byte()).unwrap(),
            ClientAction::ExchangeResults
        );
        m.results_exchanged();
        assert_eq!(
            m.on_byte(State::DisplayResults.to_byte()).unwrap(),
            ClientAction::DisplayResults
        );
        assert_eq!(m.phase(), ClientPhase::Done);
    }

    #[test]
    fn client_rejects_out_of_order_and_unknown_bytes() {
        let mut m = ClientMachine::new();
        assert_eq!(m.on_byte(State::TestStart.to_byte()).unwrap_err().code, Code::MESSAGE);
        assert_eq!(m.on_byte(0x42).unwrap_err().code, Code::MESSAGE);
        assert_eq!(m.on_byte(0xff).unwrap(), ClientAction::AccessDenied);
        assert_eq!(m.on_byte(0xfe).unwrap(), ClientAction::ServerError);
        assert_eq!(m.on_byte(11).unwrap(), ClientAction::ServerTerminated);
    }

    #[test]
    fn server_accepts_only_client_messages() {
        let mut m = ServerMachine::new();
        assert_eq!(m.on_byte(State::TestStart.to_byte()).unwrap(), ServerAction::Ignore);
        assert!(m.on_byte(State::ParamExchange.to_byte()).is_err());
        m.running();
        assert_eq!(m.on_byte(State::TestEnd.to_byte()).unwrap(), ServerAction::EndTest);
        m.results_sent();
        assert_eq!(m.on_byte(State::IperfDone.to_byte()).unwrap(), ServerAction::Done);
        assert_eq!(
            m.on_byte(State::ClientTerminate.to_byte()).unwrap(),
            ServerAction::ClientTerminated
        );
    }
}
