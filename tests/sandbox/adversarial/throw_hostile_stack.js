// attack: Error with an own stack getter that spins (never read)
// phase: producer
// expect: logic_error:Error: x
export default Keep.workflow({
  producers: { h: { handler: async (ctx, state) => {
    const e = new Error('x');
    Object.defineProperty(e, 'stack', { get() { for (;;) {} } });
    throw e;
  } } },
});
