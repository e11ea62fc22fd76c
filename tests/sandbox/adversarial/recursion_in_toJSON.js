// attack: toJSON that recurses forever in the result
// phase: producer
// expect: limit_exceeded:stack|cpu_time
export default Keep.workflow({
  producers: { h: { handler: async (ctx, state) => {
    const o = { toJSON() { return [o]; } };
    return o;
  } } },
});
