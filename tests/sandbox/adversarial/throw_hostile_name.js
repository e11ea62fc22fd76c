// attack: throw an object whose name getter spins
// phase: producer
// expect: limit_exceeded:cpu_time
export default Keep.workflow({
  producers: { h: { handler: async (ctx, state) => {
    throw { get name() { for (;;) {} }, message: 'm' };
  } } },
});
