// attack: 2 GiB ArrayBuffer
// phase: producer
// expect: limit_exceeded:memory
export default Keep.workflow({
  producers: { h: { handler: async (ctx, state) => {
    return new ArrayBuffer(2 ** 31).byteLength;
  } } },
});
