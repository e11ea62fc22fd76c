// attack: Symbol.toPrimitive that spins on the result (never called)
// phase: producer
// expect: completed:{}
export default Keep.workflow({
  producers: { h: { handler: async (ctx, state) => {
    return { [Symbol.toPrimitive]() { for (;;) {} } };
  } } },
});
