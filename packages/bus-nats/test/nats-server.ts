/** The real `nats-server` of the tests lives in the test kit, shared with the server's fleet tests. */
export { NATS_SERVER_PATH, NatsServer, natsServerAvailable, warnIfNoNatsServer } from '@mdp/test-kit';
export type { NatsServerOptions } from '@mdp/test-kit';
