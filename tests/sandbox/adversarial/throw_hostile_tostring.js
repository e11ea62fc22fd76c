// attack: throw an object whose toString spins
// phase: producer
// expect: logic_error:not an Error
export default Keep.workflow({
  producers: { h: { handler: async (ctx, state) => {
    throw { toString() { for (;;) {} } };
  } } },
});
