// Owns nothing: the one DOM helper every module uses (an element of index.html by its id).
export const $ = (id) => document.getElementById(id);
